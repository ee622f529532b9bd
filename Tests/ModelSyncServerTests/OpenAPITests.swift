import AsyncHTTPClient
import Foundation
import ModelSyncJSON
import ModelSyncProtocol
@testable import ModelSyncServer
import Prometheus
import NIOHTTP1
import ServerTestSupport
import Testing

/// The OpenAPI document (`GET /openapi.json`) against the server: every documented operation is
/// answered with a status the document lists for it (its success among them), every route the
/// server answers is documented, and methods the document leaves out are refused.
/// `.ci/schemathesis` fuzzes the same document against the running binary.
@Suite struct OpenAPITests {
    static let methods = ["get", "head", "post", "put", "patch", "delete", "options"]

    /// Values for the templated path segments: `/{resource}` is tried as a collection and as a
    /// singular resource.
    static let samples: [String: [String]] = ["resource": ["posts", "profile"], "id": ["1"], "children": ["comments"]]

    /// The routes the server answers, read from its route table (with the metrics endpoint on),
    /// in the document's spelling: each must be in the document.
    static var routes: [(String, String)] {
        let backend = JSONFileBackend(root: [:], file: nil, feedLimits: FeedLimits())
        let table = ServerRoutes(backend: backend, accounts: backend, options: ServerOptions(prometheus: PrometheusCollectorRegistry())).routes
        return table.flatMap { route in
            let path = route.path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            return route.handlers.keys.map { ($0.rawValue.lowercased(), "/" + path) }
        } + [("get", "/db"), ("head", "/db")]
    }

    static var document: JSONValue { SyncServer.openAPIDocument }

    @Test func theDocumentNamesEveryRouteAndResolvesEveryReference() throws {
        let paths = try #require(Self.document["paths"]?.objectValue)
        for (method, path) in Self.routes {
            #expect(paths[path]?[method] != nil, "\(method.uppercased()) \(path) is answered but not documented")
        }
        #expect(Self.document["openapi"] == "3.1.0")
        for reference in Self.references(in: Self.document) {
            let found = reference.dropFirst(2).split(separator: "/").reduce(Self.document as JSONValue?) { $0?[String($1)] }
            #expect(found != nil, "\(reference) does not resolve")
        }
    }

    /// The sync messages' members are the schemas' properties, and carry every required one.
    @Test func theSyncSchemasAreTheProtocolsTypes() throws {
        let messages: [(String, JSONValue)] = [
            ("SyncChange", SyncChange(sequence: 2, collection: "posts", id: 1, record: ["id": 1], createdWith: "k").json),
            ("SyncFeedPage", SyncFeedPage(changes: [], next: "2", more: false).json),
            ("SyncBatchOperation", SyncBatchOperation(method: "PATCH", path: "/posts/1", headers: ["If-Match": #""1""#], body: ["id": 1]).json),
            ("SyncBatchRequest", SyncBatchRequest(operations: []).json),
            ("SyncBatchResult", SyncBatchResult(status: 201, etag: #""2""#, replayed: true, body: ["id": 1]).json),
            ("SyncBatchResponse", SyncBatchResponse(results: []).json),
            ("Error", SyncErrorBody(error: "e", current: ["id": 1], horizon: "3").json),
        ]
        for (name, message) in messages {
            let schema = try #require(Self.document["components"]?["schemas"]?[name])
            let members = Set(try #require(message.objectValue).keys)
            let properties = Set(schema["properties"]?.objectValue?.keys ?? [])
            let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            #expect(members.isSubset(of: properties), "\(name): \(members.subtracting(properties)) not in the schema")
            #expect(required.isSubset(of: members), "\(name): the schema requires \(required.subtracting(members))")
        }
    }

    @Test(arguments: Backend.allCases) func everyDocumentedOperationIsAnsweredAsDocumented(backend: Backend) async throws {
        // With the metrics endpoint, which the document describes.
        try await withServer(options: ServerOptions(prometheus: PrometheusCollectorRegistry()), backend: backend) { _, base in
            let served = try await send(.GET, base + "/openapi.json")
            #expect(served.status == 200 && served.json == Self.document)
            let paths = try #require(Self.document["paths"]?.objectValue)
            // The built-in accounts' operations need access control: AccountSessionTests answers them.
            let operations = paths.flatMap { path, item in
                Self.methods.compactMap { method in item[method].map { (path: path, method: method, operation: $0) } }
            }.filter { $0.operation["x-modelsync-requires"] == nil }
            // Deletes after the reads and updates of the record they remove; the stream last,
            // with a backlog to read.
            let ordered = operations.sorted { Self.phase($0.method, $0.path) < Self.phase($1.method, $1.path) }
            for (path, method, operation) in ordered {
                let documented = Set(operation["responses"]?.objectValue?.keys ?? [])
                var answered: Set<String> = []
                for url in Self.instances(of: path) {
                    let status = try await Self.status(of: method, base + url, operation: operation)
                    #expect(documented.contains(String(status)), "\(method.uppercased()) \(url): \(status) is not documented (\(documented.sorted()))")
                    answered.insert(String(status))
                }
                let successes = documented.filter { $0.hasPrefix("2") }
                #expect(!answered.isDisjoint(with: successes), "\(method.uppercased()) \(path) never succeeded: \(answered.sorted())")
            }
            // A method the document leaves out of a path is refused there.
            for (path, item) in paths {
                for method in ["post", "put", "patch", "delete"] where item[method] == nil {
                    for url in Self.instances(of: path) {
                        let status = try await send(HTTPMethod(rawValue: method.uppercased()), base + url, body: #"{"title": "x"}"#).status
                        #expect(status == 404 || status == 405, "\(method.uppercased()) \(url) is not documented but answered \(status)")
                    }
                }
            }
        }
    }

    /// OPTIONS names the methods the document lists for the path, a reserved one (`/db`,
    /// `/login`, `/_accounts/1/role`) included though a template serves it here; a documented
    /// method of a feature this server lacks is 404, not 405 (schemathesis's Allow and
    /// acceptance checks found both).
    @Test func optionsNamesTheDocumentedMethodsOfEveryPath() async throws {
        try await withServer { _, base in
            let paths = try #require(Self.document["paths"]?.objectValue)
            for (path, item) in paths {
                let documented = Self.methods.filter { item[$0] != nil }.map { $0.uppercased() }
                for url in Self.instances(of: path) {
                    let answer = try await send(.OPTIONS, base + url)
                    #expect(answer.status == 204, "OPTIONS \(url)")
                    let allow = answer.headers.first(name: "Allow")?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    #expect(allow == documented, "OPTIONS \(url): \(allow ?? []) documented \(documented)")
                }
            }
            #expect(try await send(.PUT, base + "/_accounts/1/role", body: #"{"role": "admin"}"#).status == 404)
        }
    }

    /// The document's bounds hold on every path that takes the parameter (found by
    /// schemathesis's negative data check); a count too large for 64 bits is beyond the
    /// document's maximum (HostileInputTests: 400).
    @Test(arguments: Backend.allCases) func theDocumentsParameterBoundsHold(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base in
            let huge = "99999999999999999999999999"
            let reads: [(url: String, status: Int)] = [
                ("/posts?_per_page=0", 400), ("/profile?_start=-1", 400), ("/profile?_limit=-1", 400),
                ("/posts?_limit=\(Int.max)", 200), ("/posts?_start=\(Int.max)", 200), ("/_changes?limit=\(Int.max)", 200),
                ("/_changes?limit=\(huge)", 400), ("/_changes?limit=", 400), ("/_changes?limit=5,6", 400), ("/_changes?since=\(huge)", 410), ("/_changes?since=+1", 400),
                ("/posts?_since=\(huge)&_limit=-1", 400), ("/posts?_page=1&_per_page=2&_limit=false", 400), ("/profile?_page=1&_start=-1", 400),
                ("/_changes?collections=a%00b", 200),
                ("/_changes?since=0.5", 400), ("/_changes?since=1.ABCDEF0123456789", 400), ("/_changes?since=00", 200),
                ("/profile?_since=x", 400), ("/profile?_since=3.0123456789abcdef", 200), ("/profile?_since=now", 200),
                ("/_changes?since=now.0123456789abcdef", 400),
            ]
            for read in reads {
                let status = try await send(.GET, base + read.url).status
                #expect(status == read.status, "GET \(read.url)")
            }
            #expect(try await send(.GET, base + "/posts", headers: [("ModelSync-Protocol", "+1")]).status == 400)
            let longKey = String(repeating: "k", count: SyncProtocol.maximumIdempotencyKeyLength + 1)
            #expect(try await send(.PATCH, base + "/profile", body: #"{"name": "x"}"#, headers: [("Idempotency-Key", longKey)]).status == 400)
            // PostgreSQL cannot hold U+0000: refused as the document says (422), before the id is
            // looked up (a lookup carrying it failed as a 400).
            if backend == .postgres {
                #expect(try await send(.POST, base + "/posts", body: #"{"id": "a\u0000", "title": "x"}"#).status == 422)
            }
        }
    }

    /// Under access rules, each caller's answers are documented too (401, 403, 404 among them),
    /// and an admin's succeed.
    @Test func aServerWithAccessRulesAnswersAsDocumented() async throws {
        let access = AccessControl(
            rules: try AccessRules(json: ["posts": 600, "comments": 640, "profile": 644]), tokens: TestTokens(),
            accounts: BuiltInAccounts(issuer: TestTokens(), passwords: TestPasswords()))
        var options = ServerOptions(access: access)
        // A stream with nothing for its caller answers a keep-alive soon.
        options.keepAliveInterval = .milliseconds(50)
        try await withServer(options: options) { _, base in
            var answered: Set<Int> = []
            // The admin last: its deletes would take the others' rows away.
            for token in ["", "forged", "test:1:", "test:2:", "test:9:admin"] {
                answered.formUnion(try await Self.answersAsDocumented(base, token: token))
            }
            #expect(answered.isSuperset(of: [200, 401, 403, 404]))
        }
    }

    /// Sends every documented operation with `token` (empty: none), expecting each status to be
    /// documented (and an admin's to succeed); returns the statuses.
    static func answersAsDocumented(_ base: String, token: String) async throws -> Set<Int> {
        let paths = document["paths"]?.objectValue ?? [:]
        let operations = paths.flatMap { path, item in
            methods.compactMap { method in item[method].map { (path: path, method: method, operation: $0) } }
        }.sorted { phase($0.method, $0.path) < phase($1.method, $1.path) }
        let headers = token.isEmpty ? [] : [("Authorization", "Bearer \(token)")]
        var answered: Set<Int> = []
        for (path, method, operation) in operations {
            let documented = Set(operation["responses"]?.objectValue?.keys ?? [])
            for url in instances(of: path) {
                let status = try await status(of: method, base + url, operation: operation, headers: headers)
                #expect(documented.contains(String(status)), "\(method.uppercased()) \(url) with \(token): \(status) is not documented")
                answered.insert(status)
                // The accounts' own routes take their own bodies (AccountSessionTests sends them).
                if token.hasSuffix(":admin") && path != "/_metrics" && operation["x-modelsync-requires"] == nil {
                    #expect(status < 400 || status == 404 || status == 405, "\(method.uppercased()) \(url) as an admin: \(status)")
                }
            }
        }
        return answered
    }

    static func phase(_ method: String, _ path: String) -> Int {
        path == "/_changes/stream" ? 2 : method == "delete" ? 1 : 0
    }

    /// The path with each template filled by every sample.
    static func instances(of path: String) -> [String] {
        path.split(separator: "/").reduce([""]) { prefixes, segment in
            let values = segment.hasPrefix("{") ? samples[String(segment.dropFirst().dropLast())] ?? [] : [String(segment)]
            return prefixes.flatMap { prefix in values.map { prefix + "/" + $0 } }
        }
    }

    /// Sends the operation with a body its schema takes; a stream's status is read from its head.
    static func status(of method: String, _ url: String, operation: JSONValue, headers: [(String, String)] = []) async throws -> Int {
        if operation["responses"]?["200"]?["content"]?["text/event-stream"] != nil {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await HTTPClient.shared.execute(request, timeout: .minutes(5))
            guard response.status == .ok else { return Int(response.status.code) }
            #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
            // The backlog's first event, then the stream is dropped (which cancels it).
            for try await _ in response.body { break }
            return Int(response.status.code)
        }
        let schema = operation["requestBody"]?["content"]?["application/json"]?["schema"]?["$ref"]
        let body: String? = switch schema {
        case "#/components/schemas/SyncBatchRequest"?: #"{"operations": [{"method": "POST", "path": "/posts", "body": {"title": "x"}}]}"#
        case .some: #"{"title": "x"}"#
        case nil: nil
        }
        return try await send(HTTPMethod(rawValue: method.uppercased()), url, body: body, headers: headers).status
    }

    /// Every `$ref` in `value`.
    static func references(in value: JSONValue) -> [String] {
        switch value {
        case .object(let object):
            object.flatMap { key, member in key == "$ref" ? member.stringValue.map { [$0] } ?? [] : references(in: member) }
        case .array(let elements): elements.flatMap(references)
        default: []
        }
    }
}
