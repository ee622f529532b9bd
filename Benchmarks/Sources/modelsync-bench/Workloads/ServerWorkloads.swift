import AsyncHTTPClient
import Foundation
import Logging
import ModelSync
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncServerPostgres
import ModelSyncServerSQLite
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// Requests per second that `modelsync-server` answers on loopback, by backend, against the
/// peer json-server.py (a Python json-server clone). Every server is a process of its own: ours
/// is this benchmark's binary in its hidden `--serve` mode, a release build of the same server.
///
/// - `ours`: PostgreSQL, one server process;
/// - `postgres_x2`: PostgreSQL, two server processes on one database, requests alternating;
/// - `json_file`: the JSON-file backend (every write rewrites and fsyncs the file);
/// - `json_server_py`: json-server.py, when it is installed (see the README); otherwise its row
///   is skipped with a note.
///
/// 16 requests are in flight at a time. PostgreSQL comes from `MODELSYNC_POSTGRES_URL`
/// (`source .ci/postgres.sh` starts a throwaway one).
enum ServerWorkloads {
    static let sizes = [WorkloadSize(500, quick: true), WorkloadSize(2_000)]
    static let concurrency = 16
    static let postCount = 1_000
    static let userCount = 100

    static let getFiltered = workload(
        "server_get_filtered", "GET /posts?userId=<n> (10 of 1,000 posts; json-server.py ignores the filter and sends all)"
    ) { base, worker, index, _ in
        (.GET, "\(base)/posts?userId=\((worker * 7 + index) % userCount + 1)", nil, [])
    }
    static let getByID = workload("server_get_id", "GET /posts/<id>") { base, worker, index, _ in
        (.GET, "\(base)/posts/\((worker * 61 + index * 7) % postCount + 1)", nil, [])
    }
    static let post = workload("server_post", "POST /posts (the posts a run creates are deleted before the next, untimed)") { base, worker, index, _ in
        (.POST, "\(base)/posts", #"{"userId": 1, "title": "created \#(worker)-\#(index)", "body": "text"}"#, [])
    }
    static let patch = workload(
        "server_patch_if_match", "PATCH /posts/<id> with If-Match (each worker its own posts; json-server.py ignores If-Match)"
    ) { base, worker, index, etags in
        let id = worker + 1 + concurrency * (index % (postCount / concurrency))
        let headers = etags[id].map { [("If-Match", $0)] } ?? []
        return (.PATCH, "\(base)/posts/\(id)", #"{"title": "edit \#(index)"}"#, headers)
    }

    static let all = [getFiltered, getByID, post, patch]

    /// One request of worker `worker`'s `index`th: method, URL, body, headers. `etags` holds the
    /// worker's newest ETag per post id.
    typealias MakeRequest = @Sendable (_ base: String, _ worker: Int, _ index: Int, _ etags: [Int: String]) -> (
        HTTPMethod, String, String?, [(String, String)]
    )

    private static func workload(_ name: String, _ what: String, _ request: @escaping MakeRequest) -> Workload {
        Workload(
            name: name,
            summary: "\(what); ours: PostgreSQL, 1 server process; peers: postgres_x2, json_file, json_server_py",
            unit: .requestsPerSecond, sizes: sizes
        ) { size in
            let servers = try await ServerFleet.shared.start()
            let created = CreatedPosts()
            func contender(_ name: String, _ bases: [String]) -> Contender {
                Contender(name: name, reset: { try await created.deleteAll() }) {
                    try await Load.run(bases: bases, count: size.count, request: request, created: created)
                }
            }
            var peers = [contender("postgres_x2", [servers.postgres, servers.postgresSecond]), contender("json_file", [servers.jsonFile])]
            if let python = servers.jsonServerPy { peers.append(contender("json_server_py", [python])) }
            let ours = Contender(name: Contender.oursName, reset: { try await created.deleteAll() }) {
                try await Load.run(bases: [servers.postgres], count: size.count, request: request, created: created)
            }
            return PreparedWorkload(ours: ours, peers: peers) {
                for contender in [ours] + peers {
                    try await contender.reset()
                    _ = try await contender.run()
                }
                try await created.deleteAll()
            }
        }
    }
}

/// The posts a `POST` run created, deleted (untimed) before the next run so that every run
/// starts from the same data.
actor CreatedPosts {
    private var urls: [String] = []

    func add(_ url: String) { urls.append(url) }

    func deleteAll() async throws {
        let pending = urls
        urls = []
        for url in pending {
            _ = try await Load.send(.DELETE, url, body: nil, headers: [])
        }
    }
}

/// Sends a run's requests, 16 in flight.
enum Load {
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = ServerWorkloads.concurrency
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Runs `count` requests over `bases` (alternating by worker); returns the number answered
    /// 2xx, and throws on any other answer.
    static func run(bases: [String], count: Int, request: @escaping ServerWorkloads.MakeRequest, created: CreatedPosts? = nil) async throws -> Int {
        let workers = ServerWorkloads.concurrency
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let base = bases[worker % bases.count]
                    var etags: [Int: String] = [:]
                    var done = 0
                    for index in stride(from: worker, to: count, by: workers) {
                        let (method, url, body, headers) = request(base, worker, index / workers, etags)
                        let (status, headersOut, bytes) = try await send(method, url, body: body, headers: headers)
                        guard (200..<300).contains(status) else {
                            throw BenchmarkError("\(method) \(url) answered \(status): \(String(decoding: bytes, as: UTF8.self).prefix(200))")
                        }
                        if method == .POST, let id = try? JSONValue(parsing: bytes)["id"] {
                            await created?.add("\(base)/posts/\(id)")
                        }
                        if method == .PATCH, let id = Int(url.split(separator: "/").last ?? ""), let etag = headersOut["ETag"].first {
                            etags[id] = etag
                        }
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
    }

    static func send(_ method: HTTPMethod, _ url: String, body: String?, headers: [(String, String)]) async throws -> (Int, HTTPHeaders, [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), response.headers, Array(bytes.readableBytesView))
    }
}

/// The server processes the workloads share, started once and stopped when the benchmark ends.
actor ServerFleet {
    static let shared = ServerFleet()

    struct Addresses: Sendable {
        let postgres: String
        let postgresSecond: String
        let jsonFile: String
        /// Our server over a SQLite file.
        let sqlite: String
        let jsonServerPy: String?
    }

    private var addresses: Addresses?
    private var temporaryFiles: [URL] = []
    private var processes: [Process] = []
    private var quotas: [CPUQuota] = []

    func start() async throws -> Addresses {
        if let addresses { return addresses }
        guard let url = ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"], !url.isEmpty else {
            throw BenchmarkError("the server workloads need PostgreSQL: set MODELSYNC_POSTGRES_URL (source .ci/postgres.sh starts one)")
        }
        let data = Self.data()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("db.json")
        try Data(data.jsonBytes()).write(to: file)
        let database = try ServerDatabase(url: url).withSchema("modelsync_bench")
        try await SyncServer.importData(data, into: database, replacing: true)
        var components = URLComponents(string: url) ?? URLComponents()
        let items = (components.queryItems ?? []).filter { $0.name != "schema" }
        components.queryItems = items + [URLQueryItem(name: "schema", value: "modelsync_bench")]
        let databaseURL = components.string ?? url

        let executable = URL(fileURLWithPath: CommandLine.arguments[0])
        let postgres = try await launch(executable, ["--serve", databaseURL])
        let second = try await launch(executable, ["--serve", databaseURL])
        let jsonFile = try await launch(executable, ["--serve", file.path])
        let sqliteFile = directory.appendingPathComponent("data.sqlite").path
        try await SyncServer.importData(data, intoSQLite: sqliteFile)
        let sqlite = try await launch(executable, ["--serve", sqliteFile])
        var python: String?
        if let jsonServer = Self.jsonServerPy() {
            let pythonFile = directory.appendingPathComponent("python-db.json")
            try Data(data.jsonBytes()).write(to: pythonFile)
            let port = try Self.freePort()
            _ = try await launch(URL(fileURLWithPath: jsonServer), [pythonFile.path, "--bind", "127.0.0.1:\(port)"], announcesAddress: false)
            python = "http://127.0.0.1:\(port)"
            try await Self.waitUntilAnswering(python ?? "")
        } else {
            BenchmarkNotes.add("json_server_py skipped: json-server.py is not installed (see Benchmarks/README.md)")
        }
        let started = Addresses(postgres: postgres, postgresSecond: second, jsonFile: jsonFile, sqlite: sqlite, jsonServerPy: python)
        addresses = started
        return started
    }

    /// Stops every server process: SIGTERM, then SIGKILL for one still running after 2 s
    /// (json-server.py does not stop on SIGTERM).
    func stop() async {
        for process in processes where process.isRunning { process.terminate() }
        for _ in 0..<40 where processes.contains(where: \.isRunning) {
            try? await Task.sleep(for: .milliseconds(50))
        }
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        processes = []
        for quota in quotas { quota.remove() }
        quotas = []
        for file in temporaryFiles { try? FileManager.default.removeItem(at: file) }
        temporaryFiles = []
    }

    /// Stops the process `pid` alone and waits for it to exit (SIGKILL after 2 s), so that its
    /// shutdown does not share the CPU with the next measurement.
    func stop(pid: Int32) async {
        guard let process = processes.first(where: { $0.processIdentifier == pid }) else { return }
        process.terminate()
        for _ in 0..<40 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { kill(pid, SIGKILL) }
        processes.removeAll { $0 === process }
    }

    /// Files a server was started over, removed by ``stop()`` once every server is gone.
    func removeWhenStopped(_ files: [URL]) {
        temporaryFiles += files
    }

    /// 1,000 posts by 100 users.
    static func data() -> JSONValue {
        let posts = (1...ServerWorkloads.postCount).map { id -> JSONValue in
            [
                "id": .number(JSONNumber(id)), "userId": .number(JSONNumber((id - 1) % ServerWorkloads.userCount + 1)),
                "title": .string("post \(id)"), "body": .string(String(repeating: "lorem ipsum ", count: 8)),
            ]
        }
        return ["posts": .array(posts)]
    }

    /// json-server.py's `json-server`: `MODELSYNC_JSON_SERVER_PY`, the benchmark's virtual
    /// environment (`Benchmarks/.venv`), or `PATH`.
    private static func jsonServerPy() -> String? {
        let environment = ProcessInfo.processInfo.environment
        var candidates = [environment["MODELSYNC_JSON_SERVER_PY"], "Benchmarks/.venv/bin/json-server", ".venv/bin/json-server"].compactMap { $0 }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/json-server" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a process, stopped with the others by ``stop()``; for ours, returns the address it
    /// prints.
    func launch(_ executable: URL, _ arguments: [String], announcesAddress: Bool = true, quota: CPUQuota? = nil) async throws -> String {
        try await launchProcess(executable, arguments, announcesAddress: announcesAddress, quota: quota).address
    }

    /// ``launch(_:_:announcesAddress:quota:)``, with the process's id (to read its memory).
    func launchProcess(
        _ executable: URL, _ arguments: [String], announcesAddress: Bool = true, quota: CPUQuota? = nil
    ) async throws -> (address: String, pid: Int32) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = announcesAddress ? output : FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        processes.append(process)
        if let quota {
            try quota.place(process.processIdentifier)
            quotas.append(quota)
        }
        guard announcesAddress else { return ("", process.processIdentifier) }
        let (lines, continuation) = AsyncStream<String>.makeStream()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
            } else {
                continuation.yield(String(decoding: data, as: UTF8.self))
            }
        }
        var text = ""
        for await chunk in lines {
            text += chunk
            if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) { return (String(text[range]), process.processIdentifier) }
        }
        throw BenchmarkError("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) exited before listening")
    }

    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw BenchmarkError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func waitUntilAnswering(_ base: String) async throws {
        for _ in 0..<200 {
            if (try? await Load.send(.GET, base + "/posts/1", body: nil, headers: [])) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchmarkError("json-server.py did not start at \(base)")
    }
}

/// Lines printed under the report: what was skipped, and why.
enum BenchmarkNotes {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var notes: [String] = []

    static func add(_ note: String) {
        lock.withLock { if !notes.contains(note) { notes.append(note) } }
    }

    /// Adds `note` in place of the one that starts with `prefix`, if any: a figure that grows
    /// over the runs.
    static func replace(prefix: String, with note: String) {
        lock.withLock {
            notes.removeAll { $0.hasPrefix(prefix) }
            notes.append(note)
        }
    }

    static var all: [String] { lock.withLock { notes } }
}

/// `modelsync-bench --serve <file or postgres URL>`: the server the server workloads time;
/// with `--serve-access <rules file> --serve-secret <file>`, under those access rules, its
/// tokens HS256 JWTs of that secret.
enum BenchServe {
    static func run(_ source: String, access: String? = nil, secret: String? = nil) async throws {
        let server: SyncServer
        var options = ServerOptions()
        if let access, let secret {
            let rules = try AccessRules(json: JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: access)))))
            let tokens = try await JWTAccessTokens(secret: try Data(contentsOf: URL(fileURLWithPath: secret)))
            options.access = AccessControl(rules: rules, tokens: tokens)
        }
        if source.hasPrefix("postgres://") || source.hasPrefix("postgresql://") {
            server = try await SyncServer.start(
                database: try ServerDatabase(url: source), options: options, logger: quietLogger, stopsOnSignals: true)
        } else if SyncServer.isSQLitePath(source) {
            server = try await SyncServer.start(sqlite: source, options: options, logger: quietLogger, stopsOnSignals: true)
        } else {
            server = try await SyncServer.start(
                file: URL(fileURLWithPath: source), options: options, logger: quietLogger, stopsOnSignals: true)
        }
        print("serving at \(server.baseURL)")
        fflush(nil)
        await server.waitUntilStopped()
    }

    private static let quietLogger: Logger = {
        var logger = Logger(label: "modelsync-bench.server")
        logger.logLevel = .error
        return logger
    }()
}
