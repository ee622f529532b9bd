import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Model
struct Counter: SQLModel {
    var id: Int?
    var task: Int
    var value: Int
}

@Suite("SQLite: concurrency")
struct ConcurrencyTests {
    @Test("8 tasks × 125 mixed operations")
    func mixedOperations() async throws {
        try await run(tasks: 8, operations: 125)
    }

    /// `MODELSYNC_STRESS=1 swift test --filter ConcurrencyTests` runs the full-size version.
    @Test("8 tasks × 1,000 mixed operations", .enabled(if: StressMode.isOn))
    func mixedOperationsStress() async throws {
        try await run(tasks: 8, operations: 1_000)
    }

    /// Each task creates rows, updates its own rows (incrementing them), and reads; at the
    /// end every create and every increment is in the database.
    private func run(tasks: Int, operations: Int) async throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("concurrency.sqlite"), models: [Counter.self])
        let results = try await withThrowingTaskGroup(of: (created: Int, increments: Int).self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var created = 0
                    var increments = 0
                    for operation in 0..<operations {
                        switch operation % 4 {
                        case 0:
                            try await db.write { db in
                                var counter = Counter(task: task, value: 0)
                                try counter.insert(db)
                            }
                            created += 1
                        case 1:
                            try await db.write { db in
                                try db.execute("UPDATE Counter SET value = value + 1 WHERE id = (SELECT max(id) FROM Counter WHERE task = ?)", [.integer(Int64(task))])
                            }
                            increments += 1
                        case 2:
                            let mine = try await db.read { try Counter.all($0, where: "task = ?", [.integer(Int64(task))]) }
                            #expect(mine.count == created)
                        default:
                            try await db.write { db in
                                guard var counter = try Counter.first(db, where: "task = ?", [.integer(Int64(task))], order: "id DESC")
                                else { return }
                                counter.value += 1
                                try counter.save(db)
                            }
                            increments += 1
                        }
                    }
                    return (created, increments)
                }
            }
            return try await group.reduce(into: [(created: Int, increments: Int)]()) { $0.append($1) }
        }
        let created = results.map(\.created).reduce(0, +)
        let increments = results.map(\.increments).reduce(0, +)
        #expect(try await db.read { try Counter.count($0) } == created)
        #expect(try await db.read { try $0.scalar("SELECT sum(value) FROM Counter") } == .integer(Int64(increments)))
    }
}
