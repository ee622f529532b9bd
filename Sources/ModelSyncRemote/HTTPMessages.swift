import Foundation

/// HTTP header fields in order; names compare case-insensitively.
public struct HeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as sent or received.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates header fields from name-value pairs.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`. Assigning replaces every value of `name` (nil removes them).
    public subscript(name: String) -> String? {
        get { fields.first { Self.same($0.name, name) }?.value }
        set {
            fields.removeAll { Self.same($0.name, name) }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Adds a field, keeping any existing ones of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name.lowercased() == $1.name.lowercased() && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name.lowercased())
            hasher.combine(field.value)
        }
    }

    private static func same(_ a: String, _ b: String) -> Bool {
        a.caseInsensitiveCompare(b) == .orderedSame
    }
}

/// An HTTP request as a transport sends it; interceptors may change any part of it.
public struct RemoteRequest: Sendable {
    /// An HTTP method.
    public struct Method: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let get = Method(rawValue: "GET")
        public static let head = Method(rawValue: "HEAD")
        public static let post = Method(rawValue: "POST")
        public static let put = Method(rawValue: "PUT")
        public static let patch = Method(rawValue: "PATCH")
        public static let delete = Method(rawValue: "DELETE")
        public static let options = Method(rawValue: "OPTIONS")

        /// Whether repeating the request has the same effect as sending it once (RFC 9110).
        public var isIdempotent: Bool { ![Method.post, .patch].contains(self) }
        public var description: String { rawValue }
    }

    /// The method.
    public var method: Method
    /// The full URL, query included.
    public var url: URL
    /// The header fields.
    public var headers: HeaderFields
    /// The body, if any.
    public var body: [UInt8]?
    /// How long the whole exchange may take; nil for the transport's default.
    public var timeout: Duration?
    /// Whether the request may be retried. Defaults to the method's idempotency; set it for a
    /// `POST` the server deduplicates (an idempotency key).
    public var isIdempotent: Bool
    /// Whether this is the one resend an interceptor's ``InterceptorDecision/retry`` bought:
    /// another `.retry` is ignored, so an interceptor can skip work that only a retry would use
    /// (``AccountSession`` does not refresh again after a second 401).
    public internal(set) var isInterceptorRetry = false

    /// Creates a request.
    public init(
        method: Method, url: URL, headers: HeaderFields = [:], body: [UInt8]? = nil,
        timeout: Duration? = nil, isIdempotent: Bool? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.isIdempotent = isIdempotent ?? method.isIdempotent
    }
}

/// An HTTP response: status, header fields and the whole body.
public struct RemoteResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HeaderFields
    /// The body.
    public var body: [UInt8]
    /// Whether the body came from the HTTP cache after the server answered 304 Not Modified.
    public var isFromCache: Bool

    /// Creates a response.
    public init(status: Int, headers: HeaderFields = [:], body: [UInt8] = [], isFromCache: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isFromCache = isFromCache
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A value decoded from a response, with the response itself (status, headers, raw body).
public struct RemoteResult<Value: Sendable>: Sendable {
    /// The decoded value.
    public var value: Value
    /// The response it was decoded from.
    public var response: RemoteResponse
}
