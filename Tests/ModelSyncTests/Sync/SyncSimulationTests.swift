import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// Seeded simulations of many clients syncing through faults (see ``SyncSimulator``), once
/// for each conflict policy (``SimulationPolicy``).
///
/// - By default: per policy, 40 seeds of 40 steps over the JSON document and 10 over PostgreSQL.
/// - `MODELSYNC_STRESS=1`: per policy, 150 seeds of 200 steps on each backend: 30,000 steps
///   per policy and backend, 240,000 in all.
/// - `MODELSYNC_SIM_SEED=<seed>` runs that one seed, and `MODELSYNC_SIM_POLICY=<policy>` that
///   one policy, as a failure's message says; `MODELSYNC_SIM_STEPS=<n>` sets the steps per seed.
///
/// A failing seed is shrunk to the fewest steps that still fail, and printed with them.
@Suite struct SyncSimulationTests {
    static let steps = ProcessInfo.processInfo.environment["MODELSYNC_SIM_STEPS"].flatMap(Int.init) ?? StressMode.count(40, stress: 200)
    static let chosenSeed = ProcessInfo.processInfo.environment["MODELSYNC_SIM_SEED"].flatMap(UInt64.init)
    static let chosenPolicy = ProcessInfo.processInfo.environment["MODELSYNC_SIM_POLICY"].flatMap(SimulationPolicy.init(rawValue:))

    static func seeds(_ count: Int, salt: UInt64) -> [UInt64] {
        chosenSeed.map { [$0] } ?? (1...UInt64(count)).map { $0 &* 0x9E37_79B9 &+ salt }
    }

    @Test(.timeLimit(.minutes(20)), arguments: SimulationPolicy.allCases)
    func manyClientsConvergeExactlyOnceOverJSONDocument(policy: SimulationPolicy) async throws {
        try await simulate(SyncSimulator(backend: .jsonDocument), policy: policy, seeds: Self.seeds(StressMode.count(40, stress: 150), salt: 0))
    }

    @Test(.timeLimit(.minutes(20)), arguments: SimulationPolicy.allCases)
    func manyClientsConvergeExactlyOnceOverSQLite(policy: SimulationPolicy) async throws {
        try await simulate(SyncSimulator(backend: .sqlite), policy: policy, seeds: Self.seeds(StressMode.count(10, stress: 150), salt: 11))
    }

    @Test(
        .enabled(if: SimulationDatabase.url != nil || StressMode.componentsRequired, "PostgreSQL is not available: set MODELSYNC_POSTGRES_URL"),
        .timeLimit(.minutes(60)), arguments: SimulationPolicy.allCases)
    func manyClientsConvergeExactlyOnceOverPostgres(policy: SimulationPolicy) async throws {
        let database = try #require(try SimulationDatabase.make(), "MODELSYNC_POSTGRES_URL is not set: CI must start PostgreSQL (.ci/postgres.sh)")
        try await simulate(SyncSimulator(backend: .postgres(database)), policy: policy, seeds: Self.seeds(StressMode.count(10, stress: 150), salt: 7))
        await SimulationDatabase.drop(database)
    }

    /// The crash points fire: a push killed while it acknowledges a create leaves the entry
    /// sent, and after the relaunch the create is acknowledged once.
    @Test func aCrashPointRollsTheAcknowledgementBack() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-crash-point")
        defer { directory.remove() }
        try await withTestServer(data: SyncSimulator.seedData) { server in
            func store() throws -> SyncStore {
                SyncStore(
                    remote: RemoteStore(baseURL: server.baseURL), database: try Database(path: directory.path("app.sqlite"), models: [SimulatedItem.self]),
                    models: [SimulatedItem.self])
            }
            let sync = try store()
            try await SimulationRun.installCrashPoints(sync)
            var item = SimulatedItem(id: nil, tag: "c0-1", owner: 0)
            try await sync.save(&item)
            let deleted = try #require(SimulationRun.crashPoints.firstIndex { $0.name == "entry deleted" })
            try await SimulationRun.arm(deleted, in: sync.database)
            await #expect(throws: (any Error).self) { try await sync.push() }
            #expect(try await server.data["items"]?.arrayValue?.count == SimulationPlan.sharedRecords + 1)
            let relaunched = try store()
            try await SimulationRun.installCrashPoints(relaunched)
            #expect(try await relaunched.pendingCount() == 1)
            try await relaunched.push()
            #expect(try await server.data["items"]?.arrayValue?.count == SimulationPlan.sharedRecords + 1)
            let local = try await relaunched.database.read { db in try SimulatedItem.all(db) }
            #expect(local.map(\.tag) == ["c0-1"] && local.allSatisfy { ($0.id ?? 0) > 0 })
        }
    }

    private func simulate(_ simulator: SyncSimulator, policy: SimulationPolicy, seeds: [UInt64]) async throws {
        if let chosen = Self.chosenPolicy, chosen != policy { return }
        for seed in seeds {
            let plan = SimulationPlan(seed: seed, steps: Self.steps, policy: policy)
            let violations = await simulator.run(plan)
            guard !violations.isEmpty else { continue }
            let (smallest, smallestViolations) = await simulator.shrink(plan)
            Issue.record("""
                seed \(seed) (\(simulator.backend), \(policy), \(plan.clients) clients, batches of \(plan.batchSize)) broke sync's guarantees:
                \(violations.map { "  - " + $0 }.joined(separator: "\n"))
                the same failure in \(smallest.steps.count) of \(plan.steps.count) steps:
                \(smallest.steps.map { "  " + $0.description }.joined(separator: "\n"))
                \(smallestViolations.map { "  - " + $0 }.joined(separator: "\n"))
                replay: MODELSYNC_SIM_SEED=\(seed) MODELSYNC_SIM_POLICY=\(policy) MODELSYNC_SIM_STEPS=\(Self.steps) swift test --filter SyncSimulationTests
                """)
            return
        }
    }
}
