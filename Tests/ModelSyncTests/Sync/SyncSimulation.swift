import Foundation
import Logging
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncServerSQLite
import ModelSyncTesting
import PostgresNIO

/// A deterministic simulation of sync, as FoundationDB tests its core: a seed picks how many
/// clients there are and every step they take (local creates, edits and deletes, pushes, pulls,
/// crashes, also in the middle of a write transaction) and every fault their requests meet (lost
/// requests, answers lost after the server applied the write, 503s and 429s); the run's conflict
/// policy is one of ``SimulationPolicy``. Each client has its own SQLite file and `SyncStore`;
/// the server is the bundled one, over a JSON document or PostgreSQL. Requests go one at a time,
/// so a seed replays exactly.
///
/// After the steps the faults stop, every client pushes and pulls until nothing changes, and the
/// run is checked against what each app was told (``SimulationHistory``) and what the policy
/// promises (docs/RELIABILITY.md, "What each conflict policy promises"):
/// - exactly once: every record a client created exists at most once on the server, and once
///   unless an app deleted it; a client's own record holds the last value its owner saved;
/// - no invented values: every field of a record holds a value some app saved to it;
/// - no resurrection, where the policy forbids it (``SimulationPolicy/recreatesDeleted``): a
///   record deleted on the server never comes back;
/// - one writer's row (server wins, client wins): every record is a row as one app saved it
///   whole, so the winner's content is kept, never mixed with the loser's;
/// - each writer's field (merge, the custom policy): a field only one client writes holds its
///   last saved value, in every record no app deleted;
/// - convergence: every client's table equals the server's, every outbox is empty, nothing is
///   parked, no temporary key is left;
/// - honest conflicts: a conflict only on a record another client wrote.
///
/// Records are of two kinds: a client's own records (only it edits and deletes them, so their
/// final state is known) and shared records, which any client creates, edits and deletes: each
/// client has a field of its own in them (`a0`…`a2`), and `common` has every client as writer.
/// Concurrent edits and deletes of a shared record meet in the conflict policy, and the policies
/// that keep an edit over a delete create the record again.
@Model
struct SimulatedItem: SQLModel, Equatable {
    var id: Int?
    var tag: String
    /// The client that created it, -1 for a shared record.
    var owner: Int
    var a0: String = ""
    var a1: String = ""
    var a2: String = ""
    /// A field of shared records that every client writes.
    var common: String = ""

    /// The field client `client` writes.
    static func field(_ client: Int) -> WritableKeyPath<SimulatedItem, String> {
        [\.a0, \.a1, \.a2][client]
    }

    /// The fields apps write, by name.
    static var fields: [(name: String, path: WritableKeyPath<SimulatedItem, String>)] {
        [("a0", \.a0), ("a1", \.a1), ("a2", \.a2), ("common", \.common)]
    }

    /// What an app saved, without the key (a create's row has none yet).
    var content: [String] { [tag, String(owner), a0, a1, a2, common] }
}

/// The conflict policy of a simulated run.
enum SimulationPolicy: String, Sendable, CaseIterable, CustomStringConvertible {
    case serverWins, clientWins, merge, custom

    var description: String { rawValue }

    var conflicts: ConflictPolicy<SimulatedItem> {
        switch self {
        case .serverWins: .serverWins
        case .clientWins: .clientWins
        case .merge: .merge()
        case .custom: Self.editsWin
        }
    }

    /// An app's own rule: an edit wins over a delete, on either side (the record is kept, or
    /// created again); fields merge three-way, and a field changed on both sides keeps the
    /// larger value.
    static let editsWin = ConflictPolicy<SimulatedItem>.custom { base, local, server in
        guard let local else { return server }
        guard var merged = server else { return local }
        for (_, path) in SimulatedItem.fields {
            let (b, l, s) = (base?[keyPath: path], local[keyPath: path], merged[keyPath: path])
            guard l != s else { continue }
            merged[keyPath: path] = s == b ? l : l == b ? s : max(l, s)
        }
        return merged
    }

    /// Whether the policy may create a deleted record again (an edit against a delete).
    var recreatesDeleted: Bool { self == .clientWins || self == .custom }

    /// Whether every record is a row one app saved whole: the policy keeps one side, never a mix.
    var keepsWholeRows: Bool { self == .serverWins || self == .clientWins }

    /// Whether a field with one writer keeps that writer's last value (a three-way merge).
    var keepsEachWritersField: Bool { self == .merge || self == .custom }
}

extension SimulatedItem: RemoteResource {
    static let remote = RemoteConfiguration(path: "items")
}

/// One step of a simulated run.
enum SimulationStep: Sendable, Hashable, CustomStringConvertible {
    case create(client: Int)
    /// A new shared record.
    case createShared(client: Int)
    /// An edit of the client's own record (`shared` false) or of a shared one, picked by `pick`:
    /// of the client's field, or (`common`) of the field every client writes.
    case edit(client: Int, pick: Int, shared: Bool, common: Bool = false)
    /// A delete of the client's own record (`shared` false) or of a shared one.
    case delete(client: Int, pick: Int, shared: Bool = false)
    /// A push whose first requests meet `faults`, in order.
    case push(client: Int, faults: [TransportFault?])
    case pull(client: Int, faults: [TransportFault?])
    /// The app is killed: its store and database are dropped and opened again from the file.
    case crash(client: Int)
    /// The app is killed in the middle of a write transaction of a push (or a pull): at the
    /// statement that `point` names (``SimulationRun/crashPoints``), which fails and rolls the
    /// transaction back, as a process that dies there leaves it. Then it is opened again.
    case crashDuring(client: Int, pull: Bool, point: Int, faults: [TransportFault?])

    var description: String {
        func faults(_ list: [TransportFault?]) -> String {
            list.isEmpty ? "" : " " + list.map { $0.map { "\($0)" } ?? "ok" }.joined(separator: ",")
        }
        switch self {
        case .create(let client): return "c\(client) create"
        case .createShared(let client): return "c\(client) create shared"
        case .edit(let client, let pick, let shared, let common):
            return "c\(client) edit \(shared ? "shared" : "own") #\(pick)" + (common ? " common" : "")
        case .delete(let client, let pick, let shared): return "c\(client) delete \(shared ? "shared" : "own") #\(pick)"
        case .push(let client, let list): return "c\(client) push" + faults(list)
        case .pull(let client, let list): return "c\(client) pull" + faults(list)
        case .crash(let client): return "c\(client) crash"
        case .crashDuring(let client, let pull, let point, let list):
            return "c\(client) crash during \(pull ? "pull" : "push") at \(SimulationRun.crashPoints[point].name)" + faults(list)
        }
    }
}

/// Everything a run does, drawn from one seed.
struct SimulationPlan: Sendable {
    static let sharedRecords = 3

    var seed: UInt64
    var policy: SimulationPolicy
    var clients: Int
    /// 1: one request per entry; more: `POST /_batch`.
    var batchSize: Int
    var steps: [SimulationStep]

    init(seed: UInt64, steps count: Int, policy: SimulationPolicy = .merge) {
        self.policy = policy
        var random = SeededGenerator(seed: seed)
        let clients = Int.random(in: 1...3, using: &random)
        (self.seed, self.clients) = (seed, clients)
        batchSize = Bool.random(using: &random) ? 1 : 100
        func faults() -> [TransportFault?] {
            (0..<Int.random(in: 0...4, using: &random)).map { _ in
                switch Int.random(in: 0..<100, using: &random) {
                case ..<45: nil
                case ..<70: .loseAnswer
                case ..<82: .loseRequest
                case ..<94: .status(503)
                default: .status(429)
                }
            }
        }
        steps = (0..<count).map { _ in
            let client = Int.random(in: 0..<clients, using: &random)
            let pick = Int.random(in: 0..<1_000, using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case ..<12: return .create(client: client)
            case ..<16: return .createShared(client: client)
            case ..<28: return .edit(client: client, pick: pick, shared: false)
            case ..<36: return .edit(client: client, pick: pick, shared: true)
            case ..<44: return .edit(client: client, pick: pick, shared: true, common: true)
            case ..<50: return .delete(client: client, pick: pick)
            case ..<54: return .delete(client: client, pick: pick, shared: true)
            case ..<76: return .push(client: client, faults: faults())
            case ..<88: return .pull(client: client, faults: faults())
            case ..<94: return .crash(client: client)
            default:
                let point = Int.random(in: 0..<SimulationRun.crashPoints.count, using: &random)
                return .crashDuring(client: client, pull: Bool.random(using: &random), point: point, faults: faults())
            }
        }
    }
}

/// What each app was told succeeded.
struct SimulationHistory {
    /// Each own record's last value of its owner's field; nil once its owner deleted it.
    var own: [String: String?] = [:]
    /// Each shared record's last value of each client's own field.
    var shared: [String: [Int: String]] = [:]
    /// Every value an app saved to each field of each record, by tag and field name.
    var savedValues: [String: [String: Set<String>]] = [:]
    /// Every row as an app saved it (``SimulatedItem/content``), and the seed's shared rows.
    var savedRows: Set<[String]> = []
    /// The clients that saved or deleted each record.
    var writers: [String: Set<Int>] = [:]
    /// Shared records created by an app, and those some app deleted.
    var createdShared: Set<String> = []
    var deletedShared: Set<String> = []
    var created = 0

    mutating func saved(_ item: SimulatedItem, by client: Int) {
        savedRows.insert(item.content)
        writers[item.tag, default: []].insert(client)
        for (name, path) in SimulatedItem.fields { savedValues[item.tag, default: [:]][name, default: []].insert(item[keyPath: path]) }
    }
}

/// Where a simulated run keeps its server.
enum SimulationBackend: Sendable, CustomStringConvertible {
    case jsonDocument
    case postgres(ServerDatabase)
    /// A SQLite file in the run's temporary directory.
    case sqlite

    var description: String {
        switch self {
        case .jsonDocument: "json"
        case .postgres: "postgres"
        case .sqlite: "sqlite"
        }
    }
}

/// Runs plans and checks them.
struct SyncSimulator {
    let backend: SimulationBackend

    static var seedData: JSONValue {
        ["items": .array((1...SimulationPlan.sharedRecords).map { index in
            ["id": .number(JSONNumber(index)), "tag": .string("shared-\(index)"), "owner": -1, "a0": "", "a1": "", "a2": "", "common": ""]
        })]
    }

    static var seedItems: [SimulatedItem] {
        (1...SimulationPlan.sharedRecords).map { SimulatedItem(id: $0, tag: "shared-\($0)", owner: -1) }
    }

    /// The invariants the run broke, as sentences; empty when it held.
    func run(_ plan: SimulationPlan) async -> [String] {
        do {
            let directory = try TemporaryDirectory(prefix: "modelsync-simulation")
            defer { directory.remove() }
            let server = switch backend {
            case .jsonDocument: try await TestServer.start(data: Self.seedData)
            case .postgres(let database): try await TestServer.start { try await SyncServer.start(data: Self.seedData, database: database, options: $0) }
            case .sqlite: try await TestServer.start { try await SyncServer.start(data: Self.seedData, sqlite: directory.path("server.sqlite"), options: $0) }
            }
            let result: [String]
            do {
                result = try await SimulationRun(plan: plan, server: server, directory: directory).run()
            } catch {
                result = ["the run failed: \(error)"]
            }
            await server.shutdown()
            return result
        } catch {
            return ["the run could not start: \(error)"]
        }
    }

    /// A failing plan with as few steps as still fail (delta debugging, within `budget` runs).
    func shrink(_ plan: SimulationPlan, budget: Int = 150) async -> (SimulationPlan, [String]) {
        var smallest = plan
        var violations = await run(plan)
        var runs = 1
        var chunk = max(1, plan.steps.count / 2)
        while runs < budget {
            var removed = false
            var start = 0
            while start < smallest.steps.count && runs < budget {
                var candidate = smallest
                candidate.steps.removeSubrange(start..<min(smallest.steps.count, start + chunk))
                let found = await run(candidate)
                runs += 1
                if found.isEmpty {
                    start += chunk
                } else {
                    (smallest, violations, removed) = (candidate, found, true)
                }
            }
            if !removed {
                if chunk == 1 { break }
                chunk = max(1, chunk / 2)
            }
        }
        return (smallest, violations)
    }
}

/// One run of a plan against one server.
final class SimulationRun {
    /// Where a write transaction can be made to fail, as a process killed there: a trigger on
    /// each of these writes raises an error while the point is armed (`sim_crash`). A record
    /// stored by an upsert is an insert or an update: its point has a trigger for each.
    static let crashPoints: [(name: String, triggers: [String])] = [
        ("entry deleted", ["AFTER DELETE ON modelsync_outbox"]),
        ("entry changed", ["AFTER UPDATE ON modelsync_outbox"]),
        ("version stored", ["AFTER INSERT ON modelsync_row_versions", "AFTER UPDATE ON modelsync_row_versions"]),
        ("key rewritten", ["AFTER INSERT ON modelsync_key_rewrites", "AFTER UPDATE ON modelsync_key_rewrites"]),
        ("row stored", ["AFTER INSERT ON \"\(SimulatedItem.schema.table)\""]),
        ("row changed", ["AFTER UPDATE ON \"\(SimulatedItem.schema.table)\""]),
        ("cursor stored", ["AFTER INSERT ON modelsync_cursors", "AFTER UPDATE ON modelsync_cursors"]),
    ]

    struct Client {
        var database: Database
        var sync: SyncStore
        let faults: FaultPlan
    }

    let plan: SimulationPlan
    let server: TestServer
    let directory: TemporaryDirectory
    var clients: [Client] = []
    var history = SimulationHistory()
    /// Conflicts each client reported, gathered before a crash drops its store.
    var conflicts: [[SyncConflict]]
    /// The ids of the records on the server when it was last looked at, and of those it held
    /// once and no longer did: a record deleted on the server that comes back was created again.
    var serverIDs: Set<Int> = []
    var deletedIDs: Set<Int> = []
    var resurrections: [String] = []

    init(plan: SimulationPlan, server: TestServer, directory: TemporaryDirectory) {
        self.plan = plan
        self.server = server
        self.directory = directory
        conflicts = Array(repeating: [], count: plan.clients)
        for item in SyncSimulator.seedItems { history.savedRows.insert(item.content) }
    }

    func open(_ index: Int, faults: FaultPlan = FaultPlan()) async throws -> Client {
        let database = try Database(path: directory.path("client\(index).sqlite"), models: [SimulatedItem.self])
        var options = RemoteStore.Options()
        // The plan decides every failure; the sync layer's own retries are what is tested.
        options.retry = .none
        options.caching = false
        let remote = RemoteStore(baseURL: server.baseURL, transport: FaultyTransport(decide: { _ in faults.next() }), options: options)
        let sync = SyncStore(
            remote: remote, database: database, models: [SimulatedItem.self], maxConcurrentRequests: 1, maxBatchSize: plan.batchSize,
            logger: Logger(label: "modelsync.simulation", factory: { _ in SwiftLogNoOpLogHandler() }))
        sync.configure(SimulatedItem.self, conflicts: plan.policy.conflicts)
        try await Self.installCrashPoints(sync)
        return Client(database: database, sync: sync, faults: faults)
    }

    /// Creates the crash points' triggers in the store's database, all disarmed.
    static func installCrashPoints(_ sync: SyncStore) async throws {
        _ = try await sync.pendingCount()  // the sync tables, for the triggers
        try await sync.database.write { db in
            try db.execute("CREATE TABLE IF NOT EXISTS sim_crash (point INTEGER NOT NULL)")
            try db.execute("DELETE FROM sim_crash")
            for (index, point) in crashPoints.enumerated() {
                for (number, trigger) in point.triggers.enumerated() {
                    try db.execute("""
                        CREATE TRIGGER IF NOT EXISTS sim_crash_\(index)_\(number) \(trigger)
                        WHEN EXISTS (SELECT 1 FROM sim_crash WHERE point = \(index))
                        BEGIN SELECT RAISE(ABORT, 'simulated crash'); END
                        """)
                }
            }
        }
    }

    /// Arms crash point `point`: its next write fails.
    static func arm(_ point: Int, in database: Database) async throws {
        try await database.write { db in try db.execute("INSERT INTO sim_crash (point) VALUES (?)", [.integer(Int64(point))]) }
    }

    func run() async throws -> [String] {
        for index in 0..<plan.clients { clients.append(try await open(index)) }
        for client in clients { try await client.sync.pull(SimulatedItem.self) }
        try await observeServer()
        for (index, step) in plan.steps.enumerated() {
            try await perform(step, at: index)
            switch step {
            case .push, .crashDuring(_, false, _, _): try await observeServer()
            default: break
            }
        }
        for client in clients { client.faults.set([]) }
        if let stuck = try await settle() { return [stuck] }
        return try await check()
    }

    /// Notes which records the server holds now: one it held before, lost since and holds
    /// again was created again after its deletion (ids are never given twice).
    private func observeServer() async throws {
        // Only for a policy that never creates a deleted record again: the others need no
        // reading of the server's data after every push.
        guard !plan.policy.recreatesDeleted else { return }
        let ids = Set(try await server.data["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? [])
        for id in ids.intersection(deletedIDs) {
            resurrections.append("record \(id) was deleted on the server and came back, which \(plan.policy) never does")
        }
        deletedIDs.formUnion(serverIDs.subtracting(ids))
        deletedIDs.subtract(ids)
        serverIDs = ids
    }

    private func rows(of client: Int, shared: Bool) async throws -> [SimulatedItem] {
        try await clients[client].database.read { db in try SimulatedItem.all(db) }
            .filter { shared ? $0.owner == -1 : $0.owner == client }
            .sorted { $0.tag < $1.tag }
    }

    private func perform(_ step: SimulationStep, at index: Int) async throws {
        switch step {
        case .create(let client):
            history.created += 1
            var item = SimulatedItem(id: nil, tag: "c\(client)-\(history.created)", owner: client)
            item[keyPath: SimulatedItem.field(client)] = "v\(index)"
            try await clients[client].sync.save(&item)
            history.own[item.tag] = .some("v\(index)")
            history.saved(item, by: client)
        case .createShared(let client):
            history.created += 1
            var item = SimulatedItem(id: nil, tag: "s-\(history.created)", owner: -1, common: "v\(index)")
            item[keyPath: SimulatedItem.field(client)] = "v\(index)"
            try await clients[client].sync.save(&item)
            history.createdShared.insert(item.tag)
            history.shared[item.tag, default: [:]][client] = "v\(index)"
            history.saved(item, by: client)
        case .edit(let client, let pick, let shared, let common):
            let candidates = try await rows(of: client, shared: shared)
            guard !candidates.isEmpty else { return }
            var item = candidates[pick % candidates.count]
            if shared && common {
                item.common = "v\(index)"
            } else {
                item[keyPath: SimulatedItem.field(client)] = "v\(index)"
                if shared { history.shared[item.tag, default: [:]][client] = "v\(index)" } else { history.own[item.tag] = .some("v\(index)") }
            }
            try await clients[client].sync.save(&item)
            history.saved(item, by: client)
        case .delete(let client, let pick, let shared):
            let candidates = try await rows(of: client, shared: shared)
            guard !candidates.isEmpty else { return }
            let item = candidates[pick % candidates.count]
            try await clients[client].sync.delete(item)
            history.writers[item.tag, default: []].insert(client)
            if shared { history.deletedShared.insert(item.tag) } else { history.own[item.tag] = .some(nil) }
        case .push(let client, let faults):
            clients[client].faults.set(faults)
            _ = try? await clients[client].sync.push()
            clients[client].faults.set([])
        case .pull(let client, let faults):
            clients[client].faults.set(faults)
            _ = try? await clients[client].sync.pull(SimulatedItem.self)
            clients[client].faults.set([])
        case .crash(let client):
            try await crash(client)
        case .crashDuring(let client, let pull, let point, let faults):
            try await Self.arm(point, in: clients[client].database)
            clients[client].faults.set(faults)
            if pull { _ = try? await clients[client].sync.pull(SimulatedItem.self) } else { _ = try? await clients[client].sync.push() }
            clients[client].faults.set([])
            try await crash(client)
        }
    }

    /// Drops the client's store and database and opens them again from the file (disarming
    /// any crash point). No request of theirs is running: steps take turns.
    private func crash(_ client: Int) async throws {
        conflicts[client] += try await clients[client].sync.status().conflicts
        clients[client] = try await open(client, faults: clients[client].faults)
    }

    /// Pushes and pulls, faults off, until two rounds change nothing; a sentence when it never does.
    private func settle() async throws -> String? {
        var quiet = 0
        for _ in 0..<30 {
            var changed = false
            for client in clients {
                let pushed = try await client.sync.push()
                try await observeServer()
                let pulled = try await client.sync.pull(SimulatedItem.self)
                if pushed.sent + pushed.conflicts + pulled.upserted + pulled.deleted + pulled.conflicts > 0 { changed = true }
            }
            quiet = changed ? 0 : quiet + 1
            if quiet == 2 { return nil }
        }
        return "syncing never became quiet after the faults stopped"
    }

    private func check() async throws -> [String] {
        var violations = resurrections
        let records = try await server.data["items"]?.arrayValue ?? []
        let items = try records.map { try JSONModelDecoder().decode(SimulatedItem.self, from: $0.jsonBytes()) }
        let byTag = Dictionary(grouping: items, by: \.tag)
        for (tag, copies) in byTag where copies.count > 1 {
            violations.append("\(tag) is on the server \(copies.count) times (applied more than once)")
        }
        for (tag, last) in history.own {
            let copies = byTag[tag] ?? []
            let owner = Int(tag.dropFirst().prefix { $0 != "-" }) ?? 0
            switch last {
            case nil where !copies.isEmpty:
                violations.append("\(tag) was deleted by its client but is on the server")
            case let value? where copies.isEmpty:
                violations.append("\(tag) (last saved \(value)) is not on the server (lost)")
            case let value? where copies.contains(where: { $0[keyPath: SimulatedItem.field(owner)] != value }):
                violations.append("\(tag): the server holds \(copies.map { $0[keyPath: SimulatedItem.field(owner)] }), the app last saved \(value)")
            default: break
            }
        }
        let seedTags = Set(SyncSimulator.seedItems.map(\.tag))
        for item in items where item.owner >= 0 ? history.own[item.tag] == nil : !seedTags.contains(item.tag) && !history.createdShared.contains(item.tag) {
            violations.append("\(item.tag) is on the server, but no app created it")
        }
        for tag in history.createdShared.union(seedTags).subtracting(history.deletedShared) where byTag[tag] == nil {
            violations.append("shared \(tag), which no app deleted, is not on the server (lost)")
        }
        for item in items {
            for (name, path) in SimulatedItem.fields where !item[keyPath: path].isEmpty {
                if history.savedValues[item.tag]?[name]?.contains(item[keyPath: path]) != true {
                    violations.append("\(item.tag).\(name) is \(item[keyPath: path]), which no app saved to it")
                }
            }
            if plan.policy.keepsWholeRows && !history.savedRows.contains(item.content) {
                violations.append("\(item.tag) is \(item.content.dropFirst(2)) on the server, not a row one app saved (\(plan.policy) keeps one side whole)")
            }
        }
        if plan.policy.keepsEachWritersField {
            for item in items where item.owner == -1 && !history.deletedShared.contains(item.tag) {
                for client in 0..<plan.clients {
                    let expected = history.shared[item.tag]?[client] ?? ""
                    let held = item[keyPath: SimulatedItem.field(client)]
                    if held != expected { violations.append("\(item.tag): client \(client)'s field is \(held), the app last saved \(expected)") }
                }
            }
        }
        let serverRows = items.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
        for (index, client) in clients.enumerated() {
            let local = try await client.database.read { db in try SimulatedItem.all(db) }.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            if local != serverRows {
                let localTags = local.map { "\($0.id ?? 0):\($0.tag)" }, serverTags = serverRows.map { "\($0.id ?? 0):\($0.tag)" }
                violations.append("client \(index)'s table differs from the server's: \(localTags) against \(serverTags)")
            }
            if local.contains(where: { ($0.id ?? 0) < 0 }) { violations.append("client \(index) kept a temporary key") }
            let status = try await client.sync.status()
            if status.pendingCount > 0 || !status.parked.isEmpty {
                violations.append("client \(index)'s outbox is not empty: \(status.pendingCount) pending, \(status.parked.count) parked")
            }
            for conflict in conflicts[index] + status.conflicts {
                guard let tag = (conflict.local ?? conflict.server ?? conflict.base)?["tag"]?.stringValue else { continue }
                let others = (history.writers[tag] ?? []).subtracting([index])
                if others.isEmpty { violations.append("client \(index) reported a conflict on \(conflict.key) (\(tag)), which no other client writes") }
            }
        }
        return violations
    }
}

/// A PostgreSQL schema for simulated runs, dropped afterwards; nil without a database.
enum SimulationDatabase {
    static var url: String? { ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }

    static func make() throws -> ServerDatabase? {
        guard let url else { return nil }
        return try ServerDatabase(url: url).withSchema("sim_" + UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: ""))
    }

    static func drop(_ database: ServerDatabase) async {
        let schema = "\"" + database.schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        // A schema left behind holds only test data; the run's result stands.
        try? await execute("DROP SCHEMA IF EXISTS \(schema) CASCADE", in: database)
    }

    /// Runs one SQL statement on a connection of its own.
    static func execute(_ sql: String, in database: ServerDatabase) async throws {
        var configuration = PostgresClient.Configuration(
            host: database.host, port: database.port, username: database.username, password: database.password,
            database: database.database, tls: .disable)
        configuration.options.maximumConnections = 1
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        for try await _ in try await client.query(PostgresQuery(unsafeSQL: sql)) {}
    }
}
