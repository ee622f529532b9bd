import AsyncHTTPClient
import Foundation
import ModelSync
import ModelSyncServer
import NIOCore

/// A post of the bundled server's sample data (jsonplaceholder's shape).
@Model
struct BenchPost: Equatable {
    var id: Int
    var userId: Int
    var title: String
    var body: String
}

extension BenchPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

/// The same post for Foundation's `JSONDecoder`.
struct CodablePost: Decodable, Equatable {
    var id: Int
    var userId: Int
    var title: String
    var body: String
}

/// GETs of a 20-post list from the bundled modelsync-server, started in-process on a free
/// port: RemoteStore (decoding into models, HTTP caching off) against raw AsyncHTTPClient plus
/// Foundation's `JSONDecoder`, one request at a time and 16 in flight. `rest_send` leaves
/// decoding out, to show RemoteStore's own cost per request (interceptors, retries, headers).
enum RemoteWorkloads {
    static let sizes = [WorkloadSize(200, quick: true), WorkloadSize(2_000)]

    static let getSequential = getWorkload("rest_get_sequential", concurrency: 1)
    static let getConcurrent = getWorkload("rest_get_concurrent", concurrency: 16)
    static let send = Workload(
        name: "rest_send_sequential",
        summary: "GET of a 20-post list without decoding; peer: ahc (raw AsyncHTTPClient)",
        unit: .requestsPerSecond, sizes: sizes
    ) { size in
        let setup = try await Setup()
        let request = RemoteRequest(method: .get, url: setup.listURL)
        let ours = Contender.ours {
            var bytes = 0
            for _ in 0..<size.count { bytes += try await setup.store.send(request).body.count }
            return bytes
        }
        let peer = Contender(name: "ahc") {
            var bytes = 0
            for _ in 0..<size.count { bytes += try await setup.rawBody().count }
            return bytes
        }
        return PreparedWorkload(ours: ours, peers: [peer]) {
            guard try await setup.store.send(request).body == Array(try await setup.rawBody()) else {
                throw BenchmarkError("rest_send: the bodies differ")
            }
        }
    }

    static let all = [getSequential, getConcurrent, send]

    /// The server, a store and the list URL, shared by a workload's contenders. The server runs
    /// until the process ends (the harness has no teardown).
    private struct Setup: Sendable {
        let server: SyncServer
        let store: RemoteStore
        let listURL: URL

        init() async throws {
            server = try await SyncServer.start(data: SyncServer.sampleData)
            var options = RemoteStore.Options()
            options.caching = false
            store = RemoteStore(baseURL: server.baseURL, options: options)
            listURL = server.baseURL.appendingPathComponent("posts").appending(queryItems: [URLQueryItem(name: "_limit", value: "20")])
        }

        func oursList() async throws -> [BenchPost] {
            try await store.list(BenchPost.self, parameters: ["_limit": 20])
        }

        func rawBody() async throws -> Data {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: listURL.absoluteString), timeout: .seconds(30))
            guard response.status == .ok else { throw BenchmarkError("raw GET answered \(response.status)") }
            return Data(buffer: try await response.body.collect(upTo: 1 << 24))
        }

        func rawList() async throws -> [CodablePost] {
            try JSONDecoder().decode([CodablePost].self, from: try await rawBody())
        }
    }

    private static func getWorkload(_ name: String, concurrency: Int) -> Workload {
        Workload(
            name: name,
            summary: "GET a 20-post list into models, \(concurrency) in flight; peer: ahc_foundation (AsyncHTTPClient + JSONDecoder)",
            unit: .requestsPerSecond, sizes: sizes
        ) { size in
            let setup = try await Setup()
            let ours = Contender.ours {
                try await inParallel(size.count, concurrency) { try await setup.oursList().count }
            }
            let peer = Contender(name: "ahc_foundation") {
                try await inParallel(size.count, concurrency) { try await setup.rawList().count }
            }
            return PreparedWorkload(ours: ours, peers: [peer]) {
                let mine = try await setup.oursList().map { CodablePost(id: $0.id, userId: $0.userId, title: $0.title, body: $0.body) }
                try expectEqual(mine, try await setup.rawList(), name)
            }
        }
    }

    /// Runs `request` `count` times with `concurrency` in flight; returns the sum of results.
    private static func inParallel(_ count: Int, _ concurrency: Int, _ request: @escaping @Sendable () async throws -> Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<concurrency {
                let share = count / concurrency + (worker < count % concurrency ? 1 : 0)
                group.addTask {
                    var sum = 0
                    for _ in 0..<share { sum += try await request() }
                    return sum
                }
            }
            return try await group.reduce(0, +)
        }
    }
}
