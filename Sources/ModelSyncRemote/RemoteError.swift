import Foundation
import ModelSyncCore
import ModelSyncJSON

/// The method and URL of a request, for error messages.
public struct RequestSummary: Sendable, Hashable, CustomStringConvertible {
    /// The method, e.g. `GET`.
    public var method: String
    /// The URL.
    public var url: URL

    /// Summarizes a request.
    public init(_ request: RemoteRequest) {
        method = request.method.rawValue
        url = request.url
    }

    public var description: String { "\(method) \(url.absoluteString)" }
}

/// A request that got no response.
///
/// Two failures compare equal when their request and reason do; the underlying error takes
/// no part (errors are not `Equatable`).
public struct TransportFailure: Sendable, Hashable {
    /// The request.
    public var request: RequestSummary
    /// What the transport reported (connection refused, reset, …), for display.
    public var reason: String
    /// The error the transport threw (an `HTTPClientError`, a `URLError`, a NIO channel error,
    /// …), for callers that match on it; nil when the transport found the fault itself.
    public var underlyingError: (any Error & Sendable)?

    /// Creates a failure; `reason` defaults to the description of `underlyingError`.
    public init(request: RequestSummary, reason: String? = nil, underlyingError: (any Error & Sendable)? = nil) {
        self.request = request
        self.reason = reason ?? underlyingError.map { String(describing: $0) } ?? "no response"
        self.underlyingError = underlyingError
    }

    public static func == (lhs: TransportFailure, rhs: TransportFailure) -> Bool {
        lhs.request == rhs.request && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(request)
        hasher.combine(reason)
    }
}

/// A response body that is not labelled as JSON.
public struct ContentTypeMismatch: Sendable, CustomStringConvertible {
    /// The request.
    public var request: RequestSummary
    /// The response, with its `Content-Type` and body.
    public var response: RemoteResponse
    /// The `Content-Type` the server sent.
    public var contentType: String

    public var description: String { "\(request): expected JSON, the server sent \(contentType)" }
}

/// A response with a status other than 2xx (and other than a 304 served from the cache).
public struct HTTPStatusError: Sendable, CustomStringConvertible {
    /// The request.
    public var request: RequestSummary
    /// The whole response: status, headers and body.
    public var response: RemoteResponse
    /// For 400 and 422 responses that carry them, the messages by field. Keys are property names
    /// when the request was about a model whose schema maps the JSON key, JSON keys otherwise.
    public var fieldErrors: [String: [String]]
    /// The same field errors as a ``/ModelSyncCore/ValidationError``, one failure per message with
    /// its property name and JSON key, so that server failures read like local ones; nil when
    /// the response carries no field errors.
    public var validationError: ValidationError?

    /// The status code.
    public var status: Int { response.status }

    public var description: String {
        var text = "\(request) answered \(status)"
        if !fieldErrors.isEmpty {
            text += ": " + fieldErrors.sorted { $0.key < $1.key }
                .map { "\($0.key): \($0.value.joined(separator: "; "))" }.joined(separator: ", ")
        } else if !response.body.isEmpty {
            text += ": " + String(response.text.prefix(200))
        }
        return text
    }
}

/// A response whose body could not be decoded as the expected models.
public struct DecodingFailure: Sendable, CustomStringConvertible {
    /// The request.
    public var request: RequestSummary
    /// The decoder's error, with the key path of the offending value (`[3].author.id`).
    public var error: JSONError
    /// The response.
    public var response: RemoteResponse

    public var description: String { "\(request): cannot decode the response: \(error)" }
}

/// Every way a remote call fails. A failed call never changes the model the caller holds.
///
/// A struct over a private code, as postgres-nio's `PSQLError` is, not an enum: a new kind of
/// failure is then a new ``Code`` value, which breaks no caller's exhaustive `switch`. Compare
/// ``code`` with the static members (`error.code == .status`), and read the failure's data
/// from the properties (``statusError``, ``request``, …), each nil where the code has none.
///
/// ```swift
/// do { try await api.fetch(Post.self, id: 1) }
/// catch let error as RemoteError where error.code == .status && error.status == 404 { ... }
/// catch let error as RemoteError where error.code == .transport { ... }   // no answer
/// ```
public struct RemoteError: Error, Sendable, CustomStringConvertible {
    /// The kind of a ``RemoteError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case transport, timeout, status, decoding, missingID, invalidURL, unexpectedContentType, redirectLoop
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No response arrived: connection refused or dropped, DNS failure, … (``transportFailure``).
        public static let transport = Code(.transport)
        /// No response arrived in time (``request``).
        public static let timeout = Code(.timeout)
        /// The server answered with a non-2xx status (``statusError``, ``status``).
        public static let status = Code(.status)
        /// The response body is not the expected JSON (``decodingFailure``).
        public static let decoding = Code(.decoding)
        /// The model has no primary key value where the URL needs one (`PUT`, `DELETE`, nested)
        /// (``model``).
        public static let missingID = Code(.missingID)
        /// The URL could not be built: a base URL that will not parse, or an id that cannot be a
        /// path (too few or too many parts for the primary key, a composite part holding the `,`
        /// that joins the parts, an empty segment from ``RemoteResource/remotePath(for:)``).
        /// Nothing was sent (``invalidURLDescription``).
        public static let invalidURL = Code(.invalidURL)
        /// A response to be decoded is not labelled as JSON (see ``RemoteStore`` on which labels
        /// are accepted); nothing was decoded (``contentTypeMismatch``).
        public static let unexpectedContentType = Code(.unexpectedContentType)
        /// The server redirected in a loop or more times than the transport follows. Not retried:
        /// sending again would loop again (``request``).
        public static let redirectLoop = Code(.redirectLoop)

        public var description: String { base.rawValue }
    }

    /// The failure with its data; private, so that a new kind breaks no caller.
    private enum Failure: Sendable {
        case transport(TransportFailure)
        case timeout(RequestSummary)
        case status(HTTPStatusError)
        case decoding(DecodingFailure)
        case missingID(model: String)
        case invalidURL(String)
        case unexpectedContentType(ContentTypeMismatch)
        case redirectLoop(RequestSummary)
    }

    private let failure: Failure

    private init(_ failure: Failure) { self.failure = failure }

    /// No response arrived: connection refused or dropped, DNS failure, …
    public static func transport(_ failure: TransportFailure) -> RemoteError { RemoteError(.transport(failure)) }
    /// No response arrived in time.
    public static func timeout(_ request: RequestSummary) -> RemoteError { RemoteError(.timeout(request)) }
    /// The server answered with a non-2xx status.
    public static func status(_ error: HTTPStatusError) -> RemoteError { RemoteError(.status(error)) }
    /// The response body is not the expected JSON.
    public static func decoding(_ failure: DecodingFailure) -> RemoteError { RemoteError(.decoding(failure)) }
    /// The model has no primary key value where the URL needs one.
    public static func missingID(model: String) -> RemoteError { RemoteError(.missingID(model: model)) }
    /// The URL could not be built; nothing was sent.
    public static func invalidURL(_ description: String) -> RemoteError { RemoteError(.invalidURL(description)) }
    /// A response to be decoded is not labelled as JSON.
    public static func unexpectedContentType(_ mismatch: ContentTypeMismatch) -> RemoteError { RemoteError(.unexpectedContentType(mismatch)) }
    /// The server redirected in a loop or more times than the transport follows.
    public static func redirectLoop(_ request: RequestSummary) -> RemoteError { RemoteError(.redirectLoop(request)) }

    /// What kind of failure this is.
    public var code: Code {
        switch failure {
        case .transport: .transport
        case .timeout: .timeout
        case .status: .status
        case .decoding: .decoding
        case .missingID: .missingID
        case .invalidURL: .invalidURL
        case .unexpectedContentType: .unexpectedContentType
        case .redirectLoop: .redirectLoop
        }
    }

    /// The request that failed; nil for ``Code/missingID`` and ``Code/invalidURL``, which send none.
    public var request: RequestSummary? {
        switch failure {
        case .transport(let failure): failure.request
        case .timeout(let request), .redirectLoop(let request): request
        case .status(let error): error.request
        case .decoding(let failure): failure.request
        case .unexpectedContentType(let mismatch): mismatch.request
        case .missingID, .invalidURL: nil
        }
    }

    /// For ``Code/transport``: what the transport reported.
    public var transportFailure: TransportFailure? {
        if case .transport(let failure) = failure { return failure }
        return nil
    }

    /// For ``Code/status``: the request, the whole response and its field errors.
    public var statusError: HTTPStatusError? {
        if case .status(let error) = failure { return error }
        return nil
    }

    /// For ``Code/decoding``: the decoder's error and the response.
    public var decodingFailure: DecodingFailure? {
        if case .decoding(let failure) = failure { return failure }
        return nil
    }

    /// For ``Code/missingID``: the model without an id.
    public var model: String? {
        if case .missingID(let model) = failure { return model }
        return nil
    }

    /// For ``Code/invalidURL``: the URL, or what made the id no path.
    public var invalidURLDescription: String? {
        if case .invalidURL(let description) = failure { return description }
        return nil
    }

    /// For ``Code/unexpectedContentType``: the response and its `Content-Type`.
    public var contentTypeMismatch: ContentTypeMismatch? {
        if case .unexpectedContentType(let mismatch) = failure { return mismatch }
        return nil
    }

    /// The server's field errors (400 / 422) as a ``/ModelSyncCore/ValidationError``, by property
    /// name like the failures of ``/ModelSyncCore/Model/validated()``; nil for other errors.
    ///
    /// ```swift
    /// do { try await api.save(&post) }
    /// catch let error as ValidationError { show(error) }                          // local rules
    /// catch let error as RemoteError where error.validationError != nil { ... }   // the server's
    /// ```
    public var validationError: ValidationError? {
        statusError?.validationError
    }

    /// The status code, for ``Code/status`` errors.
    public var status: Int? {
        statusError?.status
    }

    public var description: String {
        switch failure {
        case .transport(let failure): "\(failure.request) failed: \(failure.reason)"
        case .timeout(let request): "\(request) timed out"
        case .status(let error): error.description
        case .decoding(let failure): failure.description
        case .missingID(let model): "\(model) has no id to put in the URL"
        case .invalidURL(let url): "invalid URL: \(url)"
        case .unexpectedContentType(let mismatch): mismatch.description
        case .redirectLoop(let request): "\(request) redirected in a loop"
        }
    }
}

extension HTTPStatusError {
    /// Reads field errors from the usual shapes of validation responses:
    /// `{"errors": {"title": ["is blank"]}}` (Rails), `{"title": ["is blank"]}` (Django REST
    /// Framework), `{"errors": [{"field": "title", "message": "is blank"}]}`, and
    /// `{"detail": [{"loc": ["body", "title"], "msg": "is blank"}]}` (FastAPI).
    static func fieldErrors(in body: [UInt8]) -> [String: [String]] {
        guard let json = try? JSONValue(parsing: body) else { return [:] }
        var result: [String: [String]] = [:]
        // Field messages are lists of strings; a lone string (`{"error": "…"}`) is no field error.
        func messages(_ value: JSONValue) -> [String]? {
            let texts = value.arrayValue?.compactMap(\.stringValue) ?? []
            return texts.isEmpty ? nil : texts
        }
        if let list = (json["errors"] ?? json["detail"])?.arrayValue {
            for entry in list {
                let field = entry["field"]?.stringValue ?? entry["loc"]?.arrayValue?.last.flatMap(\.stringValue)
                let message = entry["message"]?.stringValue ?? entry["msg"]?.stringValue
                if let field, let message { result[field, default: []].append(message) }
            }
            return result
        }
        let object = json["errors"]?.objectValue ?? json.objectValue ?? JSONObject()
        for (field, value) in object {
            if let found = messages(value) { result[field] = found }
        }
        return result
    }
}

extension HTTPStatusError {
    /// The error for a non-2xx `response`: for a 400 or 422, the field errors of its body, by
    /// property name when `model`'s schema maps the JSON key (by JSON key otherwise).
    public init(response: RemoteResponse, request: RequestSummary, model: (any Model.Type)? = nil) {
        let byJSONKey = [400, 422].contains(response.status) ? HTTPStatusError.fieldErrors(in: response.body) : [:]
        let schema = model?.schema
        // Failures in schema field order, then unknown keys by name, so the error is stable.
        let order = { (key: String) in schema?.fields.firstIndex { $0.jsonKey == key } ?? Int.max }
        let failures = byJSONKey.sorted { (order($0.key), $0.key) < (order($1.key), $1.key) }.flatMap { key, messages in
            let name = schema?.fields.first { $0.jsonKey == key }?.name ?? key
            return messages.map { ValidationFailure(fields: [name], jsonKeys: [key], message: $0) }
        }
        let fields = Dictionary(failures.map { ($0.fields[0], [$0.message]) }, uniquingKeysWith: +)
        self.init(
            request: request, response: response, fieldErrors: fields,
            validationError: failures.isEmpty ? nil : ValidationError(model: schema?.name ?? request.url.lastPathComponent, failures: failures))
    }
}
