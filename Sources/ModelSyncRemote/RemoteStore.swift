import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON

/// Settings of one call, above the store's.
public struct RequestOptions: Sendable {
    /// How long the exchange may take (each attempt); nil for the store's timeout.
    public var timeout: Duration?
    /// Extra header fields.
    public var headers: HeaderFields
    /// Marks a POST or PATCH as safe to retry (the server deduplicates it, e.g. by an
    /// idempotency key); nil keeps the method's own idempotency.
    public var isIdempotent: Bool?
    /// Whether saving and creating check the model with ``/ModelSyncCore/Model/validated()``
    /// before sending anything (the default): an invalid model then throws
    /// ``/ModelSyncCore/ValidationError`` and no request is made.
    public var validates: Bool
    /// Decodes this call's responses instead of the store's decoder (e.g. one that decodes
    /// through an identity map); nil for the store's.
    public var decoder: JSONModelDecoder?

    /// Creates call options.
    public init(
        timeout: Duration? = nil, headers: HeaderFields = [:], isIdempotent: Bool? = nil, validates: Bool = true,
        decoder: JSONModelDecoder? = nil
    ) {
        self.timeout = timeout
        self.headers = headers
        self.isIdempotent = isIdempotent
        self.validates = validates
        self.decoder = decoder
    }
}

/// Talks to a REST server on behalf of models: fetch, list, save, delete, nested resources and
/// pages, with interceptors, retries and HTTP caching.
///
/// ```swift
/// let api = RemoteStore(baseURL: URL(string: "http://127.0.0.1:3000")!)
/// var post = try await api.fetch(Post.self, id: 1)         // GET /posts/1
/// post.title = "Edited"
/// try await api.save(&post)                                // PUT /posts/1
/// let mine = try await api.list(Post.self, parameters: ["userId": 1])
/// ```
///
/// Every failure is a ``RemoteError``; a failed call never changes the model passed in.
///
/// - Ids and parent ids are always exactly one path segment: everything but RFC 3986's
///   unreserved characters, `:`, `@` and `,` is percent-encoded (`/`, `?`, `#`, `%` and NUL
///   included), and `.` and `..` are sent as `%2E` and `%2E%2E`, so an id like `"1/"` or
///   `"../2"` can never reach another resource. The same holds for the segments of a composite
///   id and of a resource's own ``RemoteResource/remotePath(for:)``.
/// - A parameter whose name is already in the base URL's query replaces it (`null` removes it).
/// - Response bodies are decoded only when labelled as JSON: `application/json`, any `+json`
///   type (`application/vnd.api+json`, `application/problem+json`), or no `Content-Type` at
///   all with a body that parses. Anything else is ``RemoteError/unexpectedContentType(_:)``.
/// - The answer to a write is merged into the value that was sent: fields the server returns
///   replace the sent ones, fields it leaves out keep their values, and an empty answer to a
///   `POST` takes the id from its `Location` header. A write the server carried out never
///   fails because its answer was partial.
public final class RemoteStore: Sendable {
    /// Store-wide settings.
    public struct Options: Sendable {
        /// Header fields sent with every request.
        public var headers: HeaderFields = ["Accept": "application/json"]
        /// The timeout of each attempt, unless a call sets its own.
        public var timeout: Duration = .seconds(30)
        /// Retries of idempotent requests.
        public var retry = RetryPolicy()
        /// Run in order before each request, and on each response.
        public var interceptors: [any RemoteInterceptor] = []
        /// Parameters for every request, evaluated per request; call parameters and model
        /// properties take precedence.
        public var defaultParameters: (@Sendable () async throws -> RemoteParameters)?
        /// Whether GET responses with `ETag` / `Last-Modified` are cached and revalidated.
        public var caching = true
        /// How many URLs the cache remembers.
        public var cacheCapacity = 512
        /// Decodes responses.
        public var decoder = JSONModelDecoder()
        /// Encodes request bodies.
        public var encoder = JSONModelEncoder()
        /// How nil properties appear in the body of a create (`POST`). Left out by default, as
        /// Django REST Framework and Rails expect: a missing field gets the server's default or
        /// a "required" error, where `null` would be taken as a value. A nil primary key is
        /// always left out. `PUT` bodies follow ``encoder`` (`null` by default, so that a cleared
        /// field is cleared on the server) and `PATCH` bodies always send `null` for a field
        /// that changed to nil.
        public var nilsInCreateBodies = JSONNilEncoding.omit
        /// Logs requests, retries and failures (at debug and warning levels).
        public var logger = Logger(label: "modelsync.remote")

        /// Creates the default options.
        public init() {}
    }

    /// The base URL of resources that do not set their own.
    public let baseURL: URL
    /// Sends the requests.
    public let transport: any HTTPTransport
    /// The store-wide settings.
    public let options: Options
    private let cache: HTTPCache

    /// Creates a store.
    public init(baseURL: URL, transport: any HTTPTransport = AsyncHTTPClientTransport(), options: Options = Options()) {
        self.baseURL = baseURL
        self.transport = transport
        self.options = options
        self.cache = HTTPCache(capacity: options.cacheCapacity)
    }

    // MARK: Reading

    /// `GET /posts/1`: the model with this id.
    public func fetch<M: RemoteResource>(
        _ type: M.Type, id: some CustomStringConvertible & Sendable, parameters: RemoteParameters = [:],
        options call: RequestOptions = RequestOptions()
    ) async throws -> M {
        try await fetchResult(type, id: id, parameters: parameters, options: call).value
    }

    /// `GET /posts/1`, with the response.
    public func fetchResult<M: RemoteResource>(
        _ type: M.Type, id: some CustomStringConvertible & Sendable, parameters: RemoteParameters = [:],
        options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResult<M> {
        let request = RemoteRequest(method: .get, url: try await itemURL(M.self, Self.remoteID(id), parameters: mergedParameters(M.self, call: parameters)))
        let response = try await send(request, call)
        return RemoteResult(value: try decode(M.self, from: response, at: M.remote.itemKey, request, call), response: response)
    }

    /// Reloads `model` from the server (`GET /posts/1`). On failure `model` is unchanged.
    public func fetch<M: RemoteResource>(
        _ model: inout M, parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) async throws {
        let id = try requireID(model)
        let request = RemoteRequest(method: .get, url: try await itemURL(M.self, id, parameters: mergedParameters(M.self, model: model, call: parameters)))
        let response = try await send(request, call)
        model = try decode(M.self, from: response, at: M.remote.itemKey, request, call)
    }

    /// `GET /posts?…`: the collection, filtered by `parameters` (names may be property names).
    public func list<M: RemoteResource>(
        _ type: M.Type, parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) async throws -> [M] {
        try await listResult(type, parameters: parameters, options: call).value
    }

    /// `GET /posts?…`, with the response (e.g. its `X-Total-Count`).
    public func listResult<M: RemoteResource>(
        _ type: M.Type, parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResult<[M]> {
        let url = try await collectionURL(M.self, parameters: mergedParameters(M.self, call: parameters))
        return try await getList(M.self, url: url, at: M.remote.listKey, call)
    }

    /// `GET /posts/1/comments`: the children of `parent`, a collection of another model.
    public func list<Child: RemoteResource, Parent: RemoteResource>(
        _ type: Child.Type, of parent: Parent, parameters: RemoteParameters = [:],
        options call: RequestOptions = RequestOptions()
    ) async throws -> [Child] {
        try await list(Child.self, of: Parent.self, parentID: requireID(parent), parameters: parameters, options: call)
    }

    /// `GET /users/1/todos`: the children of the parent with this id, with no parent value
    /// needed. The parent's part of the path is `Parent`'s ``RemoteResource/remotePath(for:)``;
    /// `parentID` may be a ``RemoteID`` (a composite key).
    public func list<Child: RemoteResource, Parent: RemoteResource>(
        _ type: Child.Type, of parentType: Parent.Type, parentID: some CustomStringConvertible & Sendable,
        parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) async throws -> [Child] {
        let url = try await nestedURL(Child.self, in: Parent.self, Self.remoteID(parentID), parameters: mergedParameters(Child.self, call: parameters))
        return try await getList(Child.self, url: url, at: Child.remote.listKey, call).value
    }

    /// The collection page by page (see ``Pagination``), as an `AsyncSequence` of arrays.
    public func pages<M: RemoteResource>(
        _ type: M.Type, parameters: RemoteParameters = [:], pagination: Pagination = .pages(size: 10),
        options call: RequestOptions = RequestOptions()
    ) -> RemotePages<M> {
        RemotePages(store: self, parameters: parameters, pagination: pagination, options: call) { store, parameters in
            try await store.collectionURL(M.self, parameters: store.mergedParameters(M.self, call: parameters))
        }
    }

    /// The children of `parent` page by page (`/posts/9/comments?page=…`, or following `next`
    /// links), as ``pages(_:parameters:pagination:options:)`` pages a collection.
    public func pages<Child: RemoteResource, Parent: RemoteResource>(
        _ type: Child.Type, of parent: Parent, parameters: RemoteParameters = [:], pagination: Pagination = .pages(size: 10),
        options call: RequestOptions = RequestOptions()
    ) -> RemotePages<Child> {
        RemotePages(store: self, parameters: parameters, pagination: pagination, options: call) { store, parameters in
            try await store.nestedURL(Child.self, in: Parent.self, store.requireID(parent), parameters: store.mergedParameters(Child.self, call: parameters))
        }
    }

    /// The children of the parent with this id page by page, with no parent value needed:
    /// Django REST Framework's `/posts/9/comments?limit=2` followed through `next` is
    /// `pages(Comment.self, of: Post.self, parentID: 9, parameters: ["limit": 2], pagination: .nextURL())`.
    public func pages<Child: RemoteResource, Parent: RemoteResource>(
        _ type: Child.Type, of parentType: Parent.Type, parentID: some CustomStringConvertible & Sendable,
        parameters: RemoteParameters = [:], pagination: Pagination = .pages(size: 10), options call: RequestOptions = RequestOptions()
    ) -> RemotePages<Child> {
        let id = Self.remoteID(parentID)
        return RemotePages(store: self, parameters: parameters, pagination: pagination, options: call) { store, parameters in
            try await store.nestedURL(Child.self, in: Parent.self, id, parameters: store.mergedParameters(Child.self, call: parameters))
        }
    }

    // MARK: Writing

    /// Saves `model`: `POST /posts` when it has no primary key value (the id and every field the
    /// server returns flow back into `model`), `PUT /posts/1` when it has one, or — given the
    /// value it was loaded as — `PATCH /posts/1` with only the fields that changed. On failure
    /// `model` is unchanged.
    ///
    /// The answer is merged into `model`: fields the server sends replace the local ones, the
    /// others keep their values; an empty answer to a `POST` takes the id from `Location`.
    /// Nil properties are left out of a `POST` body (see ``Options/nilsInCreateBodies``). The
    /// model's ``RemoteConfiguration/parameterProperties`` go into the query as for a fetch.
    ///
    /// The model is validated first (unless ``RequestOptions/validates`` is false): an invalid
    /// model throws ``/ModelSyncCore/ValidationError`` and nothing is sent. Field errors the
    /// server answers with (400 / 422) are available the same way, as
    /// ``RemoteError/validationError``.
    ///
    /// `overrides` encode properties another way in this request's body only (see
    /// ``/ModelSyncJSON/JSONEncodingOverride``): `encoding: [.field(\.age) { $0 <= 20 ? "Youth" : "Adult" }]`.
    /// The server's answer for an overridden property is not read back: `model` keeps its value.
    @discardableResult
    public func save<M: RemoteResource>(
        _ model: inout M, patchingChangesFrom original: M? = nil, parameters: RemoteParameters = [:],
        encoding overrides: [JSONEncodingOverride<M>] = [], options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResponse {
        if call.validates { _ = try model.validated() }
        let query = try await mergedParameters(M.self, model: model, call: parameters)
        guard let id = try model.remoteID(encoder: options.encoder) else {
            return try await create(&model, url: collectionURL(M.self, parameters: query), overrides, call)
        }
        let url = try await itemURL(M.self, id, parameters: query)
        let request: RemoteRequest
        if let original {
            let changes = try changedFields(from: original, to: model, overrides)
            request = RemoteRequest(method: .patch, url: url, body: try body(changes, at: M.remote.itemKey))
        } else {
            request = RemoteRequest(method: .put, url: url, body: try options.encoder.encode(model, overriding: overrides, at: M.remote.itemKey))
        }
        let response = try await send(request, call, model: M.self)
        model = try merging(response, into: model, request, overrides, call)
        return response
    }

    /// `POST /posts/1/comments`: creates `child` in the collection nested under `parent`; the
    /// returned fields flow back into `child` (merged as by
    /// ``save(_:patchingChangesFrom:parameters:encoding:options:)``). Validates `child` first, like
    /// ``save(_:patchingChangesFrom:parameters:encoding:options:)``.
    @discardableResult
    public func create<Child: RemoteResource, Parent: RemoteResource>(
        _ child: inout Child, in parent: Parent, parameters: RemoteParameters = [:],
        encoding overrides: [JSONEncodingOverride<Child>] = [], options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResponse {
        try await create(&child, in: Parent.self, parentID: { try self.requireID(parent) }, parameters, overrides, call)
    }

    /// `POST /users/1/todos`: creates `child` under the parent with this id, with no parent
    /// value needed; otherwise as ``create(_:in:parameters:encoding:options:)``.
    @discardableResult
    public func create<Child: RemoteResource, Parent: RemoteResource>(
        _ child: inout Child, in parentType: Parent.Type, parentID: some CustomStringConvertible & Sendable,
        parameters: RemoteParameters = [:], encoding overrides: [JSONEncodingOverride<Child>] = [],
        options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResponse {
        try await create(&child, in: Parent.self, parentID: { Self.remoteID(parentID) }, parameters, overrides, call)
    }

    /// Validates `child`, then creates it below the parent whose id `parentID` gives (asked only
    /// after validation, so that an invalid child is reported first).
    private func create<Child: RemoteResource, Parent: RemoteResource>(
        _ child: inout Child, in parentType: Parent.Type, parentID: () throws -> RemoteID, _ parameters: RemoteParameters,
        _ overrides: [JSONEncodingOverride<Child>], _ call: RequestOptions
    ) async throws -> RemoteResponse {
        if call.validates { _ = try child.validated() }
        let url = try await nestedURL(Child.self, in: Parent.self, parentID(), parameters: mergedParameters(Child.self, call: parameters))
        return try await create(&child, url: url, overrides, call)
    }

    /// `DELETE /posts/1`.
    @discardableResult
    public func delete<M: RemoteResource>(
        _ model: M, parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResponse {
        let url = try await itemURL(M.self, requireID(model), parameters: mergedParameters(M.self, model: model, call: parameters))
        return try await send(RemoteRequest(method: .delete, url: url), call)
    }

    /// `DELETE /posts/1`, by id.
    @discardableResult
    public func delete<M: RemoteResource>(
        _ type: M.Type, id: some CustomStringConvertible & Sendable, parameters: RemoteParameters = [:],
        options call: RequestOptions = RequestOptions()
    ) async throws -> RemoteResponse {
        let url = try await itemURL(M.self, Self.remoteID(id), parameters: mergedParameters(M.self, call: parameters))
        return try await send(RemoteRequest(method: .delete, url: url), call)
    }

    // MARK: Sending

    /// Sends a request through the interceptors, the cache and the retry policy, and returns
    /// the response; a non-2xx status is thrown as ``RemoteError/status(_:)``.
    public func send(_ request: RemoteRequest, options call: RequestOptions = RequestOptions()) async throws -> RemoteResponse {
        try await send(request, call)
    }

    private func send(_ original: RemoteRequest, _ call: RequestOptions, model: (any Model.Type)? = nil) async throws -> RemoteResponse {
        var base = original
        for field in options.headers where base.headers[field.name] == nil { base.headers.add(field.name, field.value) }
        for field in call.headers { base.headers[field.name] = field.value }
        if base.body != nil && base.headers["Content-Type"] == nil { base.headers["Content-Type"] = "application/json" }
        base.timeout = call.timeout ?? base.timeout ?? options.timeout
        if let idempotent = call.isIdempotent { base.isIdempotent = idempotent }

        var attempt = 1
        var interceptorRetried = false
        while true {
            var request = base
            request.isInterceptorRetry = interceptorRetried
            for interceptor in options.interceptors { try await interceptor.prepare(&request) }
            // After the interceptors, so that validators match the URL actually requested.
            if options.caching { cache.addValidators(to: &request) }
            let summary = RequestSummary(request)
            options.logger.debug("request", metadata: ["request": "\(summary)", "attempt": "\(attempt)"])

            let response: RemoteResponse
            do {
                response = try await transport.send(request)
            } catch let error as RemoteError {
                // A redirect loop or a refused URL would fail the same way again.
                guard error.isRetryableTransportFailure, options.retry.retriesTransportErrors,
                    try await retry(request, attempt, after: nil, error)
                else { throw error }
                attempt += 1
                continue
            }
            var decision = InterceptorDecision.proceed
            for interceptor in options.interceptors where decision == .proceed {
                decision = try await interceptor.inspect(response, for: request)
            }
            if decision == .retry && !interceptorRetried {
                interceptorRetried = true
                continue
            }
            if options.retry.retryableStatuses.contains(response.status),
                try await retry(request, attempt, after: response.headers["Retry-After"], RemoteError.status(statusError(response, summary)))
            {
                attempt += 1
                continue
            }
            let resolved = options.caching ? cache.resolve(response, for: request) : response
            guard resolved.isSuccess else { throw RemoteError.status(statusError(resolved, summary, model: model)) }
            return resolved
        }
    }

    /// Waits before another attempt and returns true, or returns false when the request may
    /// not be retried (not idempotent, or out of attempts).
    private func retry(_ request: RemoteRequest, _ attempt: Int, after retryAfter: String?, _ error: RemoteError) async throws -> Bool {
        guard request.isIdempotent, attempt < options.retry.maxAttempts else { return false }
        let delay = options.retry.delay(beforeRetry: attempt, retryAfter: retryAfter)
        options.logger.debug("retrying", metadata: ["error": "\(error)", "delay": "\(delay)", "attempt": "\(attempt)"])
        try await Task.sleep(for: delay)
        return true
    }

    private func statusError(_ response: RemoteResponse, _ request: RequestSummary, model: (any Model.Type)? = nil) -> HTTPStatusError {
        HTTPStatusError(response: response, request: request, model: model)
    }

    // MARK: Helpers

    private func create<M: RemoteResource>(
        _ model: inout M, url: URL, _ overrides: [JSONEncodingOverride<M>], _ call: RequestOptions
    ) async throws -> RemoteResponse {
        var encoder = options.encoder
        encoder.options.nilEncoding = options.nilsInCreateBodies
        var value = try encoder.encodeToValue(model, overriding: overrides)
        // The server assigns the id: `"id": null` would read as a value to a strict server.
        if let path = M.primaryKeyPath, value[path] == .null { value[path] = nil }
        let request = RemoteRequest(method: .post, url: url, body: try body(value, at: M.remote.itemKey))
        let response = try await send(request, call, model: M.self)
        model = try merging(response, into: model, request, overrides, call)
        return response
    }

    /// `sent` with what the server answered to a write: the answer's fields over the sent
    /// ones, so that a partial answer (`{"id": 7}`) loses nothing and an empty one changes
    /// nothing but the id its `Location` names. Overridden properties keep their sent values:
    /// the answer holds their per-call form, which the property's own decoding may not read.
    private func merging<M: RemoteResource>(
        _ response: RemoteResponse, into sent: M, _ request: RemoteRequest, _ overrides: [JSONEncodingOverride<M>], _ call: RequestOptions
    ) throws -> M {
        let key = M.remote.itemKey
        if response.body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            guard request.method == .post, let path = M.primaryKeyPath,
                let id = response.headers["Location"].flatMap(Self.lastPathSegment)
            else { return sent }
            // The id's JSON type is the model's to decide: a number when it reads as one.
            var candidates: [JSONValue] = [.string(id)]
            if let number = try? JSONValue(parsing: id), case .number = number { candidates.insert(number, at: 0) }
            var merged = try sentValue(sent)
            for candidate in candidates {
                merged[path] = candidate
                if let model = try? (call.decoder ?? options.decoder).decode(M.self, from: merged) { return model }
            }
            return sent
        }
        try checkContentType(response, request)
        let decoder = call.decoder ?? options.decoder
        var answer = try decoding(response, request) { try JSONValue(parsing: response.body, maxDepth: decoder.options.maxDepth) }
        if !key.isEmpty { answer = answer[key] ?? .null }
        guard let fields = answer.objectValue else { return try decode(M.self, from: response, at: key, request, call) }
        let base = try sentValue(sent)
        var merged = base
        for (name, value) in fields { merged[name] = value }
        for path in overrides.compactMap({ $0.fieldName.flatMap { options.encoder.fieldPath(of: $0, in: M.self) } }) { merged[path] = base[path] }
        return try decoding(response, request) { try decoder.decode(M.self, from: merged) }
    }

    /// Runs a decoding step, reporting a ``/ModelSyncJSON/JSONError`` as ``RemoteError/decoding(_:)``.
    private func decoding<T>(_ response: RemoteResponse, _ request: RemoteRequest, _ step: () throws -> T) throws -> T {
        do {
            return try step()
        } catch let error as JSONError {
            throw RemoteError.decoding(DecodingFailure(request: RequestSummary(request), error: error, response: response))
        }
    }

    /// Every field of `model`, nils as `null`, as the base a write's answer is merged over.
    private func sentValue<M: RemoteResource>(_ model: M) throws -> JSONValue {
        var encoder = options.encoder
        encoder.options.nilEncoding = .null
        let value = try encoder.encodeToValue(model)
        return value.objectValue == nil ? .object(JSONObject()) : value
    }

    /// The last segment of a `Location` URL (absolute or relative), percent-decoded.
    static func lastPathSegment(_ location: String) -> String? {
        let path = location.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let last = path.split(separator: "#").first?.split(separator: "/").last else { return nil }
        let segment = String(last).removingPercentEncoding ?? String(last)
        return segment.isEmpty ? nil : segment
    }

    /// Throws unless a non-empty body is labelled as JSON (or not labelled at all).
    private func checkContentType(_ response: RemoteResponse, _ request: RemoteRequest) throws {
        guard !response.body.isEmpty, let contentType = response.headers["Content-Type"] else { return }
        let media = (contentType.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        guard media != "application/json", !media.hasSuffix("+json") else { return }
        throw RemoteError.unexpectedContentType(ContentTypeMismatch(request: RequestSummary(request), response: response, contentType: contentType))
    }

    func getList<M: RemoteResource>(_ type: M.Type, url: URL, at key: JSONPath, _ call: RequestOptions) async throws -> RemoteResult<[M]> {
        let request = RemoteRequest(method: .get, url: url)
        let response = try await send(request, call)
        return RemoteResult(value: try decode([M].self, from: response, at: key, request, call), response: response)
    }

    func decode<T: JSONDecodable>(
        _ type: T.Type, from response: RemoteResponse, at key: JSONPath, _ request: RemoteRequest, _ call: RequestOptions
    ) throws -> T {
        try checkContentType(response, request)
        return try decoding(response, request) { try (call.decoder ?? options.decoder).decode(T.self, from: response.body, at: key) }
    }

    private func requireID<M: RemoteResource>(_ model: M) throws -> RemoteID {
        guard let id = try model.remoteID(encoder: options.encoder) else { throw RemoteError.missingID(model: M.schema.name) }
        return id
    }

    /// An id given by the caller: a ``RemoteID`` as it is, anything else as an id of one part.
    static func remoteID(_ id: some CustomStringConvertible & Sendable) -> RemoteID {
        (id as? RemoteID) ?? RemoteID(parts: [id.description])
    }

    /// The fields that changed from `original` to `model`, overridden ones in their per-call form.
    private func changedFields<M: RemoteResource>(from original: M, to model: M, _ overrides: [JSONEncodingOverride<M>]) throws -> JSONValue {
        // A field that changed to nil must be sent as null, whatever the encoder's nil policy.
        var encoder = options.encoder
        encoder.options.nilEncoding = .null
        let before = try encoder.encodeToValue(original).objectValue ?? JSONObject()
        let after = try encoder.encodeToValue(model).objectValue ?? JSONObject()
        // Which fields changed is decided on the model's own encoding, so an override alone sends nothing.
        let sent = overrides.isEmpty ? after : try encoder.encodeToValue(model, overriding: overrides).objectValue ?? JSONObject()
        return .object(JSONObject(after.filter { before[$0.key] != $0.value }.map { ($0.key, sent[$0.key] ?? $0.value) }))
    }

    private func body(_ value: JSONValue, at key: JSONPath) throws -> [UInt8] {
        var wrapped = JSONValue.null
        wrapped[key] = value
        return key.isEmpty ? value.jsonBytes() : wrapped.jsonBytes()
    }

    /// Call parameters over the model's parameter properties over the store's defaults, names
    /// mapped to JSON keys.
    func mergedParameters<M: RemoteResource>(_ type: M.Type, model: M? = nil, call: RemoteParameters) async throws -> RemoteParameters {
        var merged = M.mapToJSONKeys(try await options.defaultParameters?() ?? [:])
        if let model, !M.remote.parameterProperties.isEmpty {
            let json = try options.encoder.encodeToValue(model)
            for name in M.remote.parameterProperties {
                let key = M.schema.field(named: name)?.jsonKey ?? name
                if let value = json[JSONPath(parsing: key)] { merged[key] = value }
            }
        }
        merged.merge(M.mapToJSONKeys(call)) { $1 }
        return merged
    }

    /// `/posts?…`: the collection of `M`.
    func collectionURL<M: RemoteResource>(_ type: M.Type, parameters: RemoteParameters) async throws -> URL {
        try Self.buildURL(try await M.remote.baseURL?() ?? baseURL, M.remote.pathSegments, parameters)
    }

    /// `/posts/1?…`: the record `id` of `M`, at its ``RemoteResource/remotePath(for:)``.
    func itemURL<M: RemoteResource>(_ type: M.Type, _ id: RemoteID, parameters: RemoteParameters) async throws -> URL {
        let segments = try Self.itemSegments(M.self, id)
        return try Self.buildURL(try await M.remote.baseURL?() ?? baseURL, segments, parameters)
    }

    /// `/posts/1/comments?…`: the collection of `Child` below the record `parentID` of `Parent`,
    /// on `Parent`'s base URL.
    func nestedURL<Child: RemoteResource, Parent: RemoteResource>(
        _ type: Child.Type, in parentType: Parent.Type, _ parentID: RemoteID, parameters: RemoteParameters
    ) async throws -> URL {
        let segments = try Self.itemSegments(Parent.self, parentID) + Child.remote.pathSegments
        return try Self.buildURL(try await Parent.remote.baseURL?() ?? baseURL, segments, parameters)
    }

    /// The path segments of `M`'s record `id`: checked to have one non-empty part per
    /// primary-key field before ``RemoteResource/remotePath(for:)`` sees it, and to have no
    /// empty segment after. (An empty id would address the collection instead.)
    static func itemSegments<M: RemoteResource>(_ type: M.Type, _ id: RemoteID) throws -> [String] {
        guard !id.parts.isEmpty, !id.parts.contains(where: \.isEmpty) else { throw RemoteError.missingID(model: M.schema.name) }
        let expected = max(M.schema.primaryKey.count, 1)
        guard id.parts.count == expected else {
            throw RemoteError.invalidURL("\(M.schema.name) ids have \(expected) part(s), \(id.parts.count) given: \(id.parts)")
        }
        let segments = try M.remotePath(for: id)
        guard !segments.isEmpty, !segments.contains(where: \.isEmpty) else {
            throw RemoteError.invalidURL("\(M.schema.name).remotePath(for: \(id.parts)) gave an empty segment: \(segments)")
        }
        return segments
    }

    /// `base/segment/…?name=value&…`: each segment exactly one path segment, parameters sorted
    /// by name after the base URL's own query items, whose names they replace.
    static func buildURL(_ base: URL, _ segments: [String], _ parameters: RemoteParameters) throws -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            throw RemoteError.invalidURL(base.absoluteString)
        }
        var path = components.percentEncodedPath
        if path.hasSuffix("/") { path.removeLast() }
        for segment in segments { path += "/" + URLEncoding.pathSegment(segment) }
        components.percentEncodedPath = path
        var pairs: [String] = []
        // Compared by bytes: names Swift calls equal (é and e + U+0301) are different keys to a server.
        let replaced = Set(parameters.keys.map { Array($0.utf8) })
        for pair in (components.percentEncodedQuery ?? "").split(separator: "&") {
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let decoded = name.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? name
            if !replaced.contains(Array(decoded.utf8)) { pairs.append(String(pair)) }
        }
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
            for element in value.arrayValue ?? [value] {
                if let text = urlText(element) { pairs.append(URLEncoding.queryComponent(name) + "=" + URLEncoding.queryComponent(text)) }
            }
        }
        components.percentEncodedQuery = pairs.isEmpty ? nil : pairs.joined(separator: "&")
        guard let result = components.url else { throw RemoteError.invalidURL(base.absoluteString) }
        return result
    }
}

extension RemoteError {
    /// Whether sending again may succeed: no answer, or none in time.
    var isRetryableTransportFailure: Bool {
        code == .transport || code == .timeout
    }
}

extension RemoteResource {
    /// Where the primary key sits in the model's JSON, if it has one.
    static var primaryKeyPath: JSONPath? {
        guard let key = schema.primaryKey.first, let field = schema.field(named: key) else { return nil }
        return JSONPath(parsing: field.jsonKey)
    }
}

/// Percent-encoding of URL parts built from data.
enum URLEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// RFC 3986's unreserved characters: the only ones that mean the same to every server.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// `text` as exactly one path segment: every byte but the unreserved ones, `:`, `@` and `,`
    /// percent-encoded (`/`, `?`, `#` and `%` included), and `.` / `..` encoded so that no one
    /// resolves them as dot segments. (`,` stays as it is: no router splits a segment on it,
    /// and a composite id then reads `7,3`.)
    static func pathSegment(_ text: String) -> String {
        if text == "." { return "%2E" }
        if text == ".." { return "%2E%2E" }
        return encode(text) { isUnreserved($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: ",") }
    }

    /// A query name or value: `&`, `=`, `+`, `#`, `;` and spaces encoded, so that no server
    /// splits or rewrites it.
    static func queryComponent(_ text: String) -> String {
        encode(text) { byte in
            switch byte {
            case UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: ","), UInt8(ascii: "!"),
                UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"):
                true
            default: isUnreserved(byte)
            }
        }
    }

    private static func encode(_ text: String, keeping allowed: (UInt8) -> Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if allowed(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
