import CSQLite
import Foundation
@_spi(Benchmarks) import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres

/// A post as a first sync pulls it: eight fields of mixed types.
@Model
struct InitialSyncPost: SQLModel, Equatable {
    var id: Int?
    var userId: Int
    var title: String
    var body: String
    var score: Double
    var published: Bool
    /// An ISO 8601 date, kept as the server sends it.
    var createdAt: String
    /// Nil for every fourth post.
    var editedAt: String?
}

extension InitialSyncPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

/// One change of a feed page, as the limit decodes it: the page's records and nothing else.
@Model
struct InitialSyncFeedChange {
    var seq: Int
    var record: InitialSyncPost?
}

/// A feed page, as the limit decodes it.
@Model
struct InitialSyncFeedPage {
    var changes: [InitialSyncFeedChange]
    var next: String
    var more: Bool
}

/// `sync_initial`: a new device's first sync. `modelsync-server` serves `size` posts from
/// PostgreSQL (imported once, untimed, into a schema of their own; the server is a release
/// process of this binary, `--serve`), and an empty SQLite file pulls them all.
///
/// - ours: `SyncStore.pull` into a fresh file (tables made in `reset`, untimed), through the
///   change feed, 1,000 changes a page, each page one transaction. While it runs, an app's read
///   of 20 rows is issued every 10 ms on the same `Database`: its worst wait is reported.
/// - peer `decode_and_raw_insert` (the limit): the same pages, fetched once beforehand and kept
///   as bytes, decoded with `JSONModelDecoder` and inserted with a prepared `sqlite3` statement,
///   one transaction per page as ours; no HTTP, no bookkeeping.
///
/// Extra lines under the report: the stages of ours (`STAGES`), the reads' waits
/// (`READ_WAIT`), and the resident memory sampled during the pull (`MEMORY`).
enum InitialSyncWorkloads {
    static let pageSize = 5_000

    static let initial = workload(
        name: "sync_initial",
        summary: "a new device pulls every post (8 fields) from modelsync-server over PostgreSQL into an empty SQLite file; peer: decode_and_raw_insert (the limit)"
    ) { size in
        guard let url = ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"], !url.isEmpty else {
            throw BenchmarkError("sync_initial needs PostgreSQL: set MODELSYNC_POSTGRES_URL (source .ci/postgres.sh starts one)")
        }
        let schema = "modelsync_initial_\(size.label.lowercased())"
        try await SyncServer.importData(data(posts: size.count), into: try ServerDatabase(url: url).withSchema(schema), replacing: true)
        var components = URLComponents(string: url) ?? URLComponents()
        components.queryItems = (components.queryItems ?? []).filter { $0.name != "schema" } + [URLQueryItem(name: "schema", value: schema)]
        return try await ServerFleet.shared.launch(URL(fileURLWithPath: CommandLine.arguments[0]), ["--serve", components.string ?? url])
    }

    /// `sync_initial` from the server over a SQLite file (imported once, untimed).
    static let initialFromSQLite = workload(
        name: "sync_initial_sqlite",
        summary: "sync_initial from modelsync-server over a SQLite file; peer: decode_and_raw_insert (the limit)"
    ) { size in
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-initial-\(size.label)-\(UUID().uuidString).sqlite").path
        await ServerFleet.shared.removeWhenStopped(["", "-wal", "-shm"].map { URL(fileURLWithPath: file + $0) })
        try await SyncServer.importData(data(posts: size.count), intoSQLite: file)
        return try await ServerFleet.shared.launch(URL(fileURLWithPath: CommandLine.arguments[0]), ["--serve", file])
    }

    /// The workload over the server `serve` starts with `size` posts (its address).
    private static func workload(name: String, summary: String, serve: @escaping @Sendable (WorkloadSize) async throws -> String) -> Workload {
        Workload(name: name, summary: summary, unit: .rowsPerSecond, sizes: [WorkloadSize(100_000, quick: true), WorkloadSize(1_000_000)]) { size in
            try await prepare(name: name, size: size, base: try await serve(size))
        }
    }

    private static func prepare(name: String, size: WorkloadSize, base: String) async throws -> PreparedWorkload {
        guard let baseURL = URL(string: base) else { throw BenchmarkError("\(name): no server address") }
        var remoteOptions = RemoteStore.Options()
        remoteOptions.caching = false
        let remote = RemoteStore(baseURL: baseURL, options: remoteOptions)
        let pages = try await fetchPages(remote)
        let files = try Files()
        let report = InitialSyncReport(label: "\(name)_\(size.label)", count: size.count)

        let queued = SyncWorkloads.QueuedSync()
        let ours = Contender.ours(reset: {
            try removeFiles(files.ours)
            // A new device at first launch: the app opened its database and store.
            let database = try Database(path: files.ours, models: [InitialSyncPost.self])
            let sync = SyncStore(remote: remote, database: database, models: [InitialSyncPost.self], pullPageSize: pageSize)
            _ = try await sync.pendingCount()
            await queued.set(sync)
        }) {
            guard let sync = await queued.store else { throw BenchmarkError("sync_initial: no store") }
            let probe = ReadProbe(database: sync.database)
            let probing = Task { await probe.run() }
            let result: (summary: PullSummary, stages: PullStageTimes)
            let clock = ContinuousClock(), start = clock.now
            do {
                result = try await sync.pullTimingStages(InitialSyncPost.self)
            } catch {
                probing.cancel()
                throw error
            }
            let wall = start.duration(to: clock.now)
            probing.cancel()
            report.add(stages: result.stages, wall: wall, reads: await probing.value)
            return result.summary.upserted
        }

        let peer = Contender(name: "decode_and_raw_insert", reset: { try removeFiles(files.raw) }) {
            let raw = try RawDatabase(path: files.raw, schema: InitialSyncPost.sqlTable.createTableSQL())
            let (count, decode, insert) = try decodeAndInsert(pages, into: raw)
            report.addLimit(decode: decode, insert: insert)
            return count
        }

        return PreparedWorkload(ours: ours, peers: [peer]) {
            try await ours.reset()
            let upserted = try await ours.run()
            _ = try await peer.run()
            guard upserted == size.count else { throw BenchmarkError("sync_initial: ours stored \(upserted), expected \(size.count)") }
            guard let database = await queued.store?.database else { throw BenchmarkError("sync_initial: no store") }
            let raw = try Database(path: files.raw, models: [InitialSyncPost.self])
            // Compared in slices, so that the check itself does not hold two whole tables.
            for offset in stride(from: 0, to: size.count, by: 50_000) {
                let slice = "id > \(offset) AND id <= \(offset + 50_000)"
                let oursRows = try await database.read { db in try InitialSyncPost.all(db, where: slice, order: "id") }
                let rawRows = try await raw.read { db in try InitialSyncPost.all(db, where: slice, order: "id") }
                try expectEqual(oursRows, rawRows, "sync_initial: the two files' posts \(slice)")
                try expectEqual(oursRows, (offset + 1...min(offset + 50_000, size.count)).map(post), "sync_initial: the server's posts \(slice)")
            }
            report.reset()
        }
    }

    static let all = [initial, initialFromSQLite]

    /// Post `id` as the server holds it.
    static func post(_ id: Int) -> InitialSyncPost {
        let day = id % 28 + 1, hour = id % 24, minute = id % 60
        return InitialSyncPost(
            id: id, userId: id % 1_000 + 1, title: "post \(id)",
            body: "lorem ipsum dolor sit amet \(id * 7 % 10_007)",
            score: Double(id % 1_000) / 8, published: id % 3 != 0,
            createdAt: "2025-03-\(day < 10 ? "0" : "")\(day)T\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute):00Z",
            editedAt: id % 4 == 0 ? nil : "2025-04-01T12:00:00Z"
        )
    }

    /// The server's data: `count` posts, ids 1…count.
    static func data(posts count: Int) throws -> JSONValue {
        let encoder = JSONModelEncoder()
        return ["posts": .array(try (1...count).map { try encoder.encodeToValue(post($0)) })]
    }

    /// The whole feed, page by page, as the bytes the server sent (untimed: the limit's input).
    static func fetchPages(_ remote: RemoteStore) async throws -> [[UInt8]] {
        var pages: [[UInt8]] = []
        var cursor = "0"
        let url = try await remote.resourceURL(for: InitialSyncPost.self)
        var headers = HeaderFields()
        headers[SyncProtocol.versionHeader] = String(SyncProtocol.version)
        while true {
            let pageURL = url.appending(queryItems: [URLQueryItem(name: "_since", value: cursor), URLQueryItem(name: "_limit", value: String(pageSize))])
            let body = try await remote.send(RemoteRequest(method: .get, url: pageURL), options: RequestOptions(headers: headers)).body
            let page = try JSONModelDecoder().decode(InitialSyncFeedPage.self, from: body)
            pages.append(body)
            cursor = page.next
            guard page.more else { return pages }
        }
    }

    /// The limit: decodes each page with `JSONModelDecoder` and inserts its records with one
    /// prepared statement, one transaction per page. Returns the rows inserted and the time
    /// spent in each half.
    static func decodeAndInsert(_ pages: [[UInt8]], into raw: RawDatabase) throws -> (Int, Duration, Duration) {
        let columns = ["id", "userId", "title", "body", "score", "published", "createdAt", "editedAt"]
        let sql = "INSERT INTO \(quoteIdentifier(InitialSyncPost.sqlTable.name)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
            + "VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(raw.handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchmarkError("prepare failed: \(String(cString: sqlite3_errmsg(raw.handle)))")
        }
        defer { sqlite3_finalize(statement) }
        let decoder = JSONModelDecoder()
        let clock = ContinuousClock()
        var count = 0
        var decoding = Duration.zero, inserting = Duration.zero
        for bytes in pages {
            let start = clock.now
            let page = try decoder.decode(InitialSyncFeedPage.self, from: bytes)
            let decoded = clock.now
            try raw.transaction {
                for change in page.changes {
                    guard let post = change.record, let id = post.id else { continue }
                    sqlite3_bind_int64(statement, 1, Int64(id))
                    sqlite3_bind_int64(statement, 2, Int64(post.userId))
                    bindText(statement, 3, post.title)
                    bindText(statement, 4, post.body)
                    sqlite3_bind_double(statement, 5, post.score)
                    sqlite3_bind_int64(statement, 6, post.published ? 1 : 0)
                    bindText(statement, 7, post.createdAt)
                    if let editedAt = post.editedAt { bindText(statement, 8, editedAt) } else { sqlite3_bind_null(statement, 8) }
                    guard sqlite3_step(statement) == SQLITE_DONE else {
                        throw BenchmarkError("step failed: \(String(cString: sqlite3_errmsg(raw.handle)))")
                    }
                    sqlite3_reset(statement)
                    count += 1
                }
            }
            decoding += start.duration(to: decoded)
            inserting += decoded.duration(to: clock.now)
        }
        return (count, decoding, inserting)
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func bindText(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        sqlite3_bind_text(statement, index, text, -1, transient)
    }

    /// Removes a database file and its WAL files, so that the next run starts from nothing.
    static func removeFiles(_ path: String) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
    }
}

/// An app reading while the pull runs: a read of 20 rows every 10 ms; the longest wait, and the
/// resident memory at each read.
struct ReadProbe: Sendable {
    let database: Database

    struct Figures: Sendable {
        var waits: [Duration] = []
        var residentBytes: [Int] = []
    }

    func run() async -> Figures {
        var figures = Figures()
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let start = clock.now
            do {
                _ = try await database.read { db in try InitialSyncPost.all(db, order: "id DESC", limit: 20) }
            } catch {
                break
            }
            figures.waits.append(start.duration(to: clock.now))
            if let resident = Self.residentBytes() { figures.residentBytes.append(resident) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return figures
    }

    /// The process's resident memory now (`/proc/self/statm`), or nil where there is none.
    static func residentBytes() -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// The figures `sync_initial` prints besides its `RESULT` lines, gathered over the timed runs.
final class InitialSyncReport: Sendable {
    private struct Run {
        var stages: PullStageTimes
        var wall: Duration
        var worstRead: Duration
        var medianRead: Duration
        var reads: Int
        var residentGrowth: Int
    }

    private struct State {
        var runs: [Run] = []
        var limitDecode: [Duration] = []
        var limitInsert: [Duration] = []
    }

    private let label: String
    private let count: Int
    private let state = NSLockedState<State>(State())

    init(label: String, count: Int) {
        self.label = label
        self.count = count
        ExtraReportLines.add { [self] in lines() }
    }

    func reset() { state.withLock { $0 = State() } }

    func add(stages: PullStageTimes, wall: Duration, reads: ReadProbe.Figures) {
        let sorted = reads.waits.sorted()
        let growth = (reads.residentBytes.max() ?? 0) - (reads.residentBytes.first ?? 0)
        let run = Run(
            stages: stages, wall: wall, worstRead: sorted.last ?? .zero, medianRead: sorted.isEmpty ? .zero : sorted[sorted.count / 2],
            reads: sorted.count, residentGrowth: growth)
        state.withLock { $0.runs.append(run) }
    }

    func addLimit(decode: Duration, insert: Duration) {
        state.withLock {
            $0.limitDecode.append(decode)
            $0.limitInsert.append(insert)
        }
    }

    /// `STAGES`, `LIMIT_STAGES`, `READ_WAIT` and `MEMORY` lines, from the run whose wall time is
    /// the median (worst read: over every run).
    private func lines() -> [String] {
        let current = state.withLock { $0 }
        guard !current.runs.isEmpty else { return [] }
        let runs = current.runs.sorted { $0.wall < $1.wall }
        let median = runs[runs.count / 2]
        func ms(_ duration: Duration) -> String { TextReport.format(duration.milliseconds, 1) }
        func share(_ duration: Duration) -> String { TextReport.format(duration.seconds / median.wall.seconds * 100, 0) + "%" }
        let stages = median.stages
        var lines = [
            "STAGES \(label) wall_ms=\(ms(median.wall)) http_ms=\(ms(stages.http)) (\(share(stages.http))) decode_ms=\(ms(stages.decode)) (\(share(stages.decode))) "
                + "insert_ms=\(ms(stages.apply)) (\(share(stages.apply))) waiting_for_next_page_ms=\(ms(stages.waiting)) (\(share(stages.waiting)))",
            "READ_WAIT \(label) worst_ms=\(TextReport.format(current.runs.map(\.worstRead).max()?.milliseconds ?? 0, 2)) "
                + "median_ms=\(TextReport.format(median.medianRead.milliseconds, 2)) reads=\(median.reads) runs=\(current.runs.count)",
            "MEMORY \(label) resident_growth_during_pull_mib=\(TextReport.format(Double(current.runs.map(\.residentGrowth).max() ?? 0) / 1_048_576, 1)) rows=\(count)",
        ]
        if !current.limitDecode.isEmpty {
            let decode = current.limitDecode.sorted()[current.limitDecode.count / 2]
            let insert = current.limitInsert.sorted()[current.limitInsert.count / 2]
            lines.append("LIMIT_STAGES \(label) decode_ms=\(ms(decode)) insert_ms=\(ms(insert))")
        }
        return lines
    }
}

/// A value behind an `NSLock` (the benchmark's own; `Synchronization.Mutex` gives false TSan
/// reports here).
final class NSLockedState<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Lines that workloads print under the `RESULT` lines (figures other than times), gathered
/// when the report is printed.
enum ExtraReportLines {
    private static let sources = NSLockedState<[@Sendable () -> [String]]>([])

    static func add(_ source: @escaping @Sendable () -> [String]) {
        sources.withLock { $0.append(source) }
    }

    static var all: [String] { sources.withLock { $0 }.flatMap { $0() } }
}
