import ModelSyncJSON

/// `POST /_batch`: several writes in one request, applied in order and answered one by one.
///
/// `{"operations": [{"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "k"}, "body": {…}}, …]}`
public struct SyncBatchRequest: Sendable, Hashable {
    /// The most operations one batch may hold.
    public static let maximumOperations = 1_000

    /// The writes, in order.
    public var operations: [SyncBatchOperation]

    /// Creates a batch.
    public init(operations: [SyncBatchOperation]) { self.operations = operations }

    /// The batch as the client sends it.
    public var json: JSONValue { ["operations": .array(operations.map(\.json))] }

    /// The operations of a batch as sent, each read on its own: a malformed one is answered in
    /// its place, the others still run.
    ///
    /// - Throws: ``SyncProtocolError/invalid(message:path:)`` when the body has no `operations` array.
    public static func operations(in json: JSONValue) throws(SyncProtocolError) -> [Result<SyncBatchOperation, SyncProtocolError>] {
        try MessageReader(json, path: "batch").array("operations").enumerated().map { index, operation in
            Result { () throws(SyncProtocolError) in try SyncBatchOperation(json: operation, path: "batch.operations[\(index)]") }
        }
    }
}

/// One write of a batch: what it would be as a request of its own.
public struct SyncBatchOperation: Sendable, Hashable {
    /// `POST`, `PUT`, `PATCH` or `DELETE` (upper case).
    public var method: String
    /// The path below the server's base: `/posts` or `/posts/3`.
    public var path: String
    /// The header fields the write would carry (`If-Match`, `Idempotency-Key`).
    public var headers: [String: String]
    /// The body, for a create or an update.
    public var body: JSONValue?

    /// Creates an operation.
    public init(method: String, path: String, headers: [String: String] = [:], body: JSONValue? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// Reads an operation; header names match whatever their case.
    public init(json: JSONValue, path: String = "operation") throws(SyncProtocolError) {
        let reader = try MessageReader(json, path: path)
        var headers: [String: String] = [:]
        if let given = reader.member("headers") {
            guard let fields = given.objectValue else { throw .invalid(message: "expected an object", path: path + ".headers") }
            for (name, value) in fields {
                guard let text = value.stringValue else { throw .invalid(message: "expected a string", path: path + ".headers." + name) }
                headers[name] = text
            }
        }
        self.init(method: try reader.string("method").uppercased(), path: try reader.string("path"), headers: headers, body: reader.member("body"))
    }

    /// The value of header `name`, whatever its case.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    /// The operation as the client sends it.
    public var json: JSONValue {
        var object: JSONObject = ["method": .string(method), "path": .string(path)]
        if !headers.isEmpty { object["headers"] = .object(JSONObject(headers.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })) }
        if let body { object["body"] = body }
        return .object(object)
    }
}

/// The answer to a batch: one result per operation, in order.
///
/// `{"results": [{"status": 201, "etag": "\"18\"", "body": {…}}, {"status": 412, "etag": "\"20\"", "body": {"error": …, "current": …}}]}`
public struct SyncBatchResponse: Sendable, Hashable {
    /// The results, one per operation.
    public var results: [SyncBatchResult]

    /// Creates an answer.
    public init(results: [SyncBatchResult]) { self.results = results }

    /// Reads an answer.
    public init(json: JSONValue) throws(SyncProtocolError) {
        let reader = try MessageReader(json, path: "batch")
        var results: [SyncBatchResult] = []
        for (index, result) in try reader.array("results").enumerated() {
            results.append(try SyncBatchResult(json: result, path: "batch.results[\(index)]"))
        }
        self.init(results: results)
    }

    /// The answer as the server sends it.
    public var json: JSONValue { ["results": .array(results.map(\.json))] }
}

/// What one operation of a batch came to: what it would have answered alone.
public struct SyncBatchResult: Sendable, Hashable {
    /// The status it would have answered.
    public var status: Int
    /// The `ETag` it would have answered (the record's version).
    public var etag: String?
    /// Whether it is the replay of a write applied before (`Idempotent-Replayed`).
    public var replayed: Bool
    /// The body it would have answered: the record, or a ``SyncErrorBody``.
    public var body: JSONValue

    /// Creates a result.
    public init(status: Int, etag: String? = nil, replayed: Bool = false, body: JSONValue) {
        self.status = status
        self.etag = etag
        self.replayed = replayed
        self.body = body
    }

    /// Reads a result.
    public init(json: JSONValue, path: String = "result") throws(SyncProtocolError) {
        let reader = try MessageReader(json, path: path)
        self.init(
            status: try reader.integer("status"), etag: try reader.optionalString("etag"), replayed: try reader.bool("replayed", default: false),
            body: reader.member("body") ?? .null)
    }

    /// The result as the server sends it.
    public var json: JSONValue {
        var object: JSONObject = ["status": .number(JSONNumber(status)), "body": body]
        if let etag { object["etag"] = .string(etag) }
        if replayed { object["replayed"] = .bool(true) }
        return .object(object)
    }
}
