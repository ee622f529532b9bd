import Foundation
import Logging
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncServerSQLite
import ModelSyncTesting
import Testing

/// A seeded simulation of sharing: an admin adds, changes and removes three users' memberships
/// of two boards while their devices edit and create cards offline, push and pull through lost
/// requests, lost answers and 503s. After the faults stop and each device puts back what the
/// rules refused (parked 403s), every device must hold exactly the boards, memberships, cards
/// and comments its user may read on the server, as the server has them; nothing is pending;
/// every card the server holds was written by an app or seeded; no create landed twice.
@Suite struct SharingSimulationTests {
    static let steps = StressMode.count(60, stress: 300)

    @Test(.timeLimit(.minutes(20)), arguments: [SimulationBackend.jsonDocument, .sqlite])
    func devicesHoldWhatTheirMembershipsReach(backend: SimulationBackend) async throws {
        for seed in (0..<UInt64(StressMode.count(4, stress: 60))).map({ $0 &* 0x9E37_79B9 &+ 51 }) {
            let violations = try await SharingSimulation(seed: seed, steps: Self.steps, backend: backend).run()
            #expect(violations.isEmpty, "seed \(seed) on \(backend): \(violations.joined(separator: "; "))")
        }
    }

    /// The same, with each device holding cards through overlapping subscriptions (a board, two
    /// boards) that it ends and makes again, while an admin moves cards between boards: every
    /// device must hold exactly the cards its user may read on the boards it subscribes to.
    @Test(.timeLimit(.minutes(20)), arguments: [SimulationBackend.jsonDocument, .sqlite])
    func subscribedDevicesHoldWhatTheirSubscriptionsReach(backend: SimulationBackend) async throws {
        for seed in (0..<UInt64(StressMode.count(4, stress: 60))).map({ $0 &* 0x9E37_79B9 &+ 93 }) {
            let violations = try await SharingSimulation(seed: seed, steps: Self.steps, backend: backend, subscribes: true).run()
            #expect(violations.isEmpty, "seed \(seed) on \(backend): \(violations.joined(separator: "; "))")
        }
    }

    @Test(
        .enabled(if: SimulationDatabase.url != nil || StressMode.componentsRequired, "PostgreSQL is not available: set MODELSYNC_POSTGRES_URL"),
        .timeLimit(.minutes(20)))
    func devicesHoldWhatTheirMembershipsReachOverPostgres() async throws {
        let owner = try #require(try SimulationDatabase.make(), "MODELSYNC_POSTGRES_URL is not set: CI must start PostgreSQL (.ci/postgres.sh)")
        // Row-level security binds no superuser: requests run as a role it binds, as in production.
        try await Self.ensureAccessRole(owner)
        let database = owner.withRole(Self.accessRole)
        for seed in (0..<UInt64(StressMode.count(2, stress: 30))).map({ $0 &* 0x9E37_79B9 &+ 77 }) {
            let violations = try await SharingSimulation(seed: seed, steps: Self.steps, backend: .postgres(database)).run()
            #expect(violations.isEmpty, "seed \(seed) over PostgreSQL: \(violations.joined(separator: "; "))")
        }
        await SimulationDatabase.drop(owner)
    }

    static let accessRole = "modelsync_test_access"

    /// Creates ``accessRole`` unless it exists (tests running at once may race to create it).
    static func ensureAccessRole(_ database: ServerDatabase) async throws {
        try await SimulationDatabase.execute("""
            DO $$ BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(accessRole)') THEN CREATE ROLE \(accessRole) NOLOGIN; END IF;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$
            """, in: database)
    }
}

/// One seeded run of ``SharingSimulationTests``.
struct SharingSimulation {
    let seed: UInt64
    let steps: Int
    let backend: SimulationBackend
    /// Devices hold cards through subscriptions (``subscriptions``) instead of whole pulls.
    var subscribes = false

    /// Each user's subscriptions to cards: the boards each holds.
    static let subscriptions: [String: [[Int]]] = ["1": [[1]], "2": [[1, 2], [2]], "3": [[2]]]

    static func filter(_ boards: [Int]) -> SyncFilter<BoardCard> {
        boards.count == 1 ? .field(\.boardId, equals: boards[0]) : .field(\.boardId, isOneOf: boards)
    }

    static let users = ["1", "2", "3"]
    static let boards = [1, 2]
    static let roles = ["viewer", "editor", "manager"]
    static let models: [any SyncedModel.Type] = [SharedBoard.self, BoardMembership.self, BoardCard.self, CardComment.self]

    static var seedData: JSONValue {
        [
            "boards": .array(boards.map { ["id": .number(JSONNumber($0)), "ownerId": "0", "name": .string("board \($0)")] }),
            "memberships": [],
            "cards": .array((1...6).map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber(($0 - 1) / 3 + 1)), "title": .string("seed \($0)")] }),
            "comments": .array((1...6).map { ["id": .number(JSONNumber($0)), "cardId": .number(JSONNumber($0)), "authorId": "0", "body": .string("note \($0)")] }),
        ]
    }

    /// A device: its store and the faults its next requests meet.
    struct Device {
        let user: String
        let sync: SyncStore
        let faults: SimulatedFaults
    }

    /// The violations of the run's invariants, as sentences; empty when they held.
    func run() async throws -> [String] {
        let directory = try TemporaryDirectory(prefix: "modelsync-sharing-simulation")
        defer { directory.remove() }
        let access = AccessControl(rules: try AccessRules(json: SharingSyncTests.rules), tokens: PlainTokens())
        let options = ServerOptions(access: access)
        let data = Self.seedData
        let server = switch backend {
        case .jsonDocument: try await TestServer.start(data: data, options: options)
        case .postgres(let database): try await TestServer.start(options: options) { try await SyncServer.start(data: data, database: database, options: $0) }
        case .sqlite: try await TestServer.start(options: options) { try await SyncServer.start(data: data, sqlite: directory.path("server.sqlite"), options: $0) }
        }
        let result: [String]
        do {
            result = try await simulate(server, directory)
        } catch {
            result = ["the run failed: \(error)"]
        }
        await server.shutdown()
        return result
    }

    private func simulate(_ server: TestServer, _ directory: TemporaryDirectory) async throws -> [String] {
        var random = SeededGenerator(seed: seed)
        let devices = try Self.users.map { user in
            let faults = SimulatedFaults()
            var options = RemoteStore.Options()
            options.retry = .none
            options.caching = false
            options.headers.add("Authorization", "Bearer user:\(user)")
            let remote = RemoteStore(baseURL: server.baseURL, transport: FaultyTransport(decide: { _ in faults.next() }), options: options)
            let database = try Database(path: directory.path("device\(user).sqlite"), models: Self.models)
            let sync = SyncStore(
                remote: remote, database: database, models: Self.models, maxConcurrentRequests: 1,
                logger: Logger(label: "modelsync.sharing-simulation", factory: { _ in SwiftLogNoOpLogHandler() }))
            return Device(user: user, sync: sync, faults: faults)
        }
        let admin = Admin(base: server.baseURL)
        if subscribes {
            for device in devices {
                for boards in Self.subscriptions[device.user] ?? [] { try await device.sync.subscribe(BoardCard.self, where: Self.filter(boards)) }
            }
        }
        var savedTitles = Set((1...6).map { "seed \($0)" })
        var createdTags: [String] = []
        for step in 0..<steps {
            let device = devices[Int.random(in: 0..<devices.count, using: &random)]
            // About one request in six meets a fault.
            device.faults.arm(seed: random.next())
            switch Int.random(in: 0..<100, using: &random) {
            case ..<25:
                let (user, board) = (Self.users.randomElement(using: &random) ?? "1", Self.boards.randomElement(using: &random) ?? 1)
                let role = Int.random(in: 0...Self.roles.count, using: &random)
                try await admin.setRole(role < Self.roles.count ? Self.roles[role] : nil, user: user, board: board)
            case ..<50:
                let cards = try await device.sync.database.read { db in try BoardCard.all(db, order: "id") }
                guard var card = cards.randomElement(using: &random) else { continue }
                card.title = "\(device.user)-edit-\(step)"
                savedTitles.insert(card.title)
                try await device.sync.save(&card)
            case ..<58:
                let boards = try await device.sync.database.read { db in try SharedBoard.all(db, order: "id") }
                guard let board = boards.randomElement(using: &random), let boardID = board.id else { continue }
                var card = BoardCard(boardId: boardID, title: "\(device.user)-new-\(step)")
                savedTitles.insert(card.title)
                createdTags.append(card.title)
                try await device.sync.save(&card)
            case ..<75:
                _ = try? await device.sync.push()
            case ..<80 where subscribes:
                // An admin moves a card to the other board.
                let card = Int.random(in: 1...6, using: &random)
                _ = try await admin.send(.patch, "cards/\(card)", body: #"{"boardId": \#(Self.boards.randomElement(using: &random) ?? 1)}"#)
            case ..<84 where subscribes:
                // The device ends one of its subscriptions, or makes it again.
                let boards = (Self.subscriptions[device.user] ?? [[1]]).randomElement(using: &random) ?? [1]
                let held = try await device.sync.subscriptions().first { $0.filter == Self.filter(boards).query }
                if let held { try await device.sync.unsubscribe(held) } else { try await device.sync.subscribe(BoardCard.self, where: Self.filter(boards)) }
            case ..<95:
                _ = try? await Self.pullAll(device.sync, subscribes: subscribes)
            default:
                for entry in try await device.sync.parkedEntries() { try? await device.sync.discard(entry) }
            }
        }
        // Quiet: no faults; each device puts back what the rules refused, pushes, and pulls.
        for device in devices { device.faults.disarm() }
        if subscribes {
            for device in devices {
                for boards in Self.subscriptions[device.user] ?? [] { try await device.sync.subscribe(BoardCard.self, where: Self.filter(boards)) }
            }
        }
        for _ in 0..<4 {
            for device in devices {
                for entry in try await device.sync.parkedEntries() { try await device.sync.discard(entry) }
                _ = try await device.sync.push()
                try await Self.pullAll(device.sync, subscribes: subscribes)
            }
        }
        return try await check(devices, admin, savedTitles: savedTitles, createdTags: createdTags)
    }

    static func pullAll(_ sync: SyncStore, subscribes: Bool) async throws {
        _ = try await sync.pull(SharedBoard.self)
        _ = try await sync.pull(BoardMembership.self)
        if subscribes { _ = try await sync.pullSubscriptions() } else { _ = try await sync.pull(BoardCard.self) }
        _ = try await sync.pull(CardComment.self)
    }

    private func check(_ devices: [Device], _ admin: Admin, savedTitles: Set<String>, createdTags: [String]) async throws -> [String] {
        var violations: [String] = []
        for device in devices {
            let reader = Admin(base: admin.base, token: "user:\(device.user)")
            let held = try await device.sync.database.read { db in
                (
                    try SharedBoard.all(db, order: "id").map { "\($0.id ?? 0)" },
                    try BoardMembership.all(db, order: "id").map { "\($0.id ?? 0):\($0.userId):\($0.role)" },
                    try BoardCard.all(db, order: "id").map { "\($0.id ?? 0):\($0.boardId):\($0.title)" },
                    try CardComment.all(db, order: "id").map { "\($0.id ?? 0)" }
                )
            }
            let subscribed = Set((Self.subscriptions[device.user] ?? []).joined())
            let server = (
                try await reader.rows("boards").map { "\($0["id"]?.intValue ?? 0)" },
                try await reader.rows("memberships").map { "\($0["id"]?.intValue ?? 0):\(scalar($0["userId"])):\($0["role"]?.stringValue ?? "")" },
                try await reader.rows("cards").filter { !subscribes || subscribed.contains($0["boardId"]?.intValue ?? 0) }
                    .map { "\($0["id"]?.intValue ?? 0):\($0["boardId"]?.intValue ?? 0):\($0["title"]?.stringValue ?? "")" },
                try await reader.rows("comments").map { "\($0["id"]?.intValue ?? 0)" }
            )
            if held.0 != server.0 { violations.append("user \(device.user) holds boards \(held.0), may read \(server.0)") }
            if held.1 != server.1 { violations.append("user \(device.user) holds memberships \(held.1), may read \(server.1)") }
            if held.2 != server.2 { violations.append("user \(device.user) holds cards \(held.2), may read \(server.2)") }
            if held.3 != server.3 { violations.append("user \(device.user) holds comments \(held.3), may read \(server.3)") }
            let pending = try await device.sync.pendingCount()
            if pending != 0 { violations.append("user \(device.user) has \(pending) entries pending") }
        }
        let cards = try await admin.rows("cards")
        for card in cards {
            let title = card["title"]?.stringValue ?? ""
            if !savedTitles.contains(title) { violations.append("card \(card["id"]?.intValue ?? 0) holds \(title), which no app saved") }
        }
        for tag in createdTags where cards.filter({ $0["title"]?.stringValue == tag }).count > 1 {
            violations.append("the create \(tag) landed more than once")
        }
        return violations
    }

    private func scalar(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: text
        case .number(let number)?: number.text
        default: ""
        }
    }
}

/// The admin's requests (and a reader's, with its token): no faults.
private struct Admin {
    let base: URL
    var token = "admin"

    func send(_ method: RemoteRequest.Method, _ path: String, body: String? = nil) async throws -> RemoteResponse {
        var headers: HeaderFields = ["Authorization": "Bearer \(token)"]
        if body != nil { headers["Content-Type"] = "application/json" }
        return try await RemoteStore(baseURL: base).send(RemoteRequest(method: method, url: base.appending(path: path), headers: headers, body: body.map { Array($0.utf8) }))
    }

    /// Every row of `collection` this caller may read, by id.
    func rows(_ collection: String) async throws -> [JSONValue] {
        let answer = try await send(.get, collection)
        let rows: [JSONValue] = try JSONValue(parsing: answer.body).arrayValue ?? []
        func id(_ row: JSONValue) -> Int { row["id"]?.intValue ?? 0 }
        return rows.sorted { id($0) < id($1) }
    }

    /// Gives `user` the role on `board` (nil: no membership).
    func setRole(_ role: String?, user: String, board: Int) async throws {
        let existing = try await rows("memberships").first { $0["userId"]?.stringValue == user && $0["boardId"]?.intValue == board }
        switch (existing?["id"]?.intValue, role) {
        case (let id?, nil): _ = try await send(.delete, "memberships/\(id)")
        case (let id?, let role?): _ = try await send(.patch, "memberships/\(id)", body: #"{"role": "\#(role)"}"#)
        case (nil, let role?): _ = try await send(.post, "memberships", body: #"{"boardId": \#(board), "userId": "\#(user)", "role": "\#(role)"}"#)
        case (nil, nil): break
        }
    }
}

/// A device's faults: armed with a seed, about one request in six is lost, loses its answer or
/// meets a 503; disarmed, none.
final class SimulatedFaults: Sendable {
    private let state = Locked<SeededGenerator?>(nil)

    func arm(seed: UInt64) { state.withLock { $0 = SeededGenerator(seed: seed) } }
    func disarm() { state.withLock { $0 = nil } }

    func next() -> TransportFault? {
        state.withLock { generator -> TransportFault? in
            guard var random = generator else { return nil }
            defer { generator = random }
            switch Int.random(in: 0..<18, using: &random) {
            case 0: return .loseRequest
            case 1: return .loseAnswer
            case 2: return .status(503)
            default: return nil
            }
        }
    }
}
