import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import Testing

/// Two clients edit the same records offline, then sync through a server that fails and drops
/// requests, until nothing changes; afterwards both local tables equal the server's data.
@Suite struct ConvergenceTests {
    static let operations = StressMode.count(240, stress: 5_000)

    @Test(.timeLimit(.minutes(5))) func twoClientsConvergeUnderFaults() async throws {
        let seed: JSONValue = ["notes": .array((1...20).map { id in
            ["id": .number(JSONNumber(id)), "title": .string("note \(id)"), "body": "", "stars": 0]
        }), "replies": []]
        let directory = try TemporaryDirectory(prefix: "modelsync-convergence")
        defer { directory.remove() }
        try await withTestServer(data: seed) { server in
            func client(_ name: String) throws -> SyncStore {
                let database = try Database(path: directory.path("\(name).sqlite"), models: [SyncNote.self, SyncReply.self])
                return SyncStore(
                    remote: RemoteStore(baseURL: server.baseURL), database: database, models: [SyncNote.self],
                    backoff: SyncBackoff(initial: .milliseconds(1), maximum: .milliseconds(5)))
            }
            let clients = [try client("a"), try client("b")]
            for sync in clients { try await sync.pull(SyncNote.self) }

            var random = SeededGenerator(seed: 0xC0DE_5EED)
            server.inject(Fault(.status(503), fraction: 0.1))
            server.inject(Fault(.dropConnection, fraction: 0.1))
            for step in 0..<Self.operations {
                let sync = clients[random.int(in: 0...1)]
                let rows = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
                let roll = random.int(in: 0...99)
                if roll < 25 || rows.isEmpty {
                    var note = SyncNote(id: nil, title: "new \(step)", stars: random.int(in: 0...5))
                    try await sync.save(&note)
                } else if roll < 80 {
                    // Mostly the first rows, so that both clients often edit the same records.
                    var note = rows[random.int(in: 0...min(rows.count - 1, 7))]
                    switch random.int(in: 0...2) {
                    case 0: note.title = "title \(step)"
                    case 1: note.body = "body \(step)"
                    default: note.stars = random.int(in: 0...9)
                    }
                    try await sync.save(&note)
                } else if roll < 92 {
                    try await sync.delete(rows[random.int(in: 0...rows.count - 1)])
                } else {
                    // Now and then a client syncs in the middle of it all; failures are fine.
                    _ = try? await sync.push()
                    _ = try? await sync.pull(SyncNote.self)
                }
            }

            // Sync until a whole round changes nothing, faults still on.
            var quietRounds = 0
            var rounds = 0
            while quietRounds < 2 {
                rounds += 1
                try #require(rounds < 500, "syncing never became quiet")
                var quiet = true
                for sync in clients {
                    do {
                        let pushed = try await sync.push()
                        let pulled = try await sync.pull(SyncNote.self)
                        if pushed.sent + pushed.conflicts + pulled.upserted + pulled.deleted > 0 { quiet = false }
                    } catch {
                        quiet = false
                    }
                }
                quietRounds = quiet ? quietRounds + 1 : 0
            }
            server.clearFaults()

            let records = try await serverRecords(server, "notes")
            var conflicts = 0
            for sync in clients {
                let rows = try await sync.database.read { db in try SyncNote.all(db) }
                #expect(rows.count == records.count)
                for row in rows {
                    let id = try #require(row.id)
                    let record = try #require(records[id], "row \(id) is not on the server")
                    #expect(record["title"]?.stringValue == row.title && record["body"]?.stringValue == row.body && record["stars"]?.intValue == row.stars)
                }
                #expect(try await sync.pendingCount() == 0)
                conflicts += try await sync.status().conflictCount
            }
            // The clients did edit the same records: the policy resolved conflicts.
            #expect(conflicts > 0)
        }
    }
}

private extension SeededGenerator {
    /// A number in `range`, by the generator's own arithmetic (the standard library's
    /// algorithm may change between releases; the tiny modulo bias does not matter here).
    mutating func int(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }
}
