import Foundation
import ModelSync

/// An item of one of the observed lists.
@Model(table: "items", indexes: [["listId"]])
struct ListItem: SQLModel, Equatable {
    var id: Int
    var listId: Int
    var value: Int
}

/// Live queries: two workloads, one of which compares like for like. `sqlite_observe_writes`
/// measures throughput where ModelSync coalesces commits that land during a fetch into one
/// delivery of the newest state while GRDB delivers every state; `sqlite_observe_latency`
/// waits for each commit's delivery before the next write, so both sides deliver every
/// committed change.
///
/// 100 observations, each of one list of 10 items (`WHERE listId = ? ORDER BY
/// id`, tables discovered from the fetch), over a table of 1,000 items, against GRDB 7.10.0's
/// `ValueObservation` (tracking the same fetch, `removeDuplicates()`, `values(in:)` on a
/// `DatabasePool`, and on a `DatabaseQueue`; see `ObservationGRDBPeers.swift`). Every write changes one item, so every
/// observation fetches again after every commit and one of them delivers.
enum ObservationWorkloads {
    static let lists = 100
    static let itemsPerList = 10
    static let items = lists * itemsPerList

    /// 1,000 writes as fast as they come, each its own transaction; timed until every
    /// observation has delivered the final state of its list (wall and CPU time).
    static let writes = workload(
        "sqlite_observe_writes",
        summary: "1,000 single-row write transactions under 100 observed queries, until each delivered its final state (not like for like: ours coalesces to the newest state, GRDB delivers every state); peers: grdb_pool, grdb_queue",
        sizes: [WorkloadSize(1_000, quick: true)]
    ) { driver, count in try await driver.writeLoop(count) }

    /// One write at a time, each waited for until its list's observation delivers it: the
    /// median time of a run over its count is the latency from commit to delivery, with the
    /// 99 other observations fetching too.
    static let latency = workload(
        "sqlite_observe_latency",
        summary: "commit-to-delivery latency: write, wait until the observation of that list delivers, repeat (like for like: both deliver every committed change); 100 observed queries; peers: grdb_pool, grdb_queue",
        sizes: [WorkloadSize(100, quick: true)]
    ) { driver, count in try await driver.roundTrips(count) }

    static let all = [writes, latency]

    private static func workload(
        _ name: String, summary: String, sizes: [WorkloadSize],
        run: @escaping @Sendable (ObservedLists, Int) async throws -> Int
    ) -> Workload {
        Workload(name: name, summary: summary, unit: .commitsPerSecond, sizes: sizes) { size in
            let files = try Files()
            let ours = try await ObservedLists.ours(path: files.ours)
            let grdbPool = try await GRDBObservationPeer.lists(path: files.directory.appendingPathComponent("grdb_pool.sqlite").path, pool: true)
            let grdbQueue = try await GRDBObservationPeer.lists(path: files.directory.appendingPathComponent("grdb_queue.sqlite").path, pool: false)
            return PreparedWorkload(
                ours: .ours { _ = files; return try await run(ours, size.count) },
                peers: [
                    Contender(name: "grdb_pool") { try await run(grdbPool, size.count) },
                    Contender(name: "grdb_queue") { try await run(grdbQueue, size.count) },
                ]
            ) {
                // One run each (which waits until every observation delivered what it should),
                // then the stored items must be the expected ones, the same for all.
                for contender in [ours, grdbPool, grdbQueue] {
                    _ = try await run(contender, size.count)
                    guard try contender.storedValues() == contender.values, contender.values == ours.values else {
                        throw BenchmarkError("\(name): the stored items differ from the expected values")
                    }
                }
            }
        }
    }
}

/// One contender's 100 observed lists: its writes, its stored values, and the values its
/// observations deliver (as the sum of each list's values).
final class ObservedLists: @unchecked Sendable {
    /// Writes one item's value in a transaction of its own.
    private let write: (_ id: Int, _ value: Int) throws -> Void
    /// Reads every item's value, by id.
    private let read: () throws -> [Int]
    /// The expected value of every item (index = id - 1), after the writes so far.
    private(set) var values = Array(repeating: 0, count: ObservationWorkloads.items)
    let arrivals = Arrivals()
    private var runs = 0

    init(write: @escaping (Int, Int) throws -> Void, read: @escaping () throws -> [Int]) {
        self.write = write
        self.read = read
    }

    /// Makes the lists of `database` (whose items all have value 0), starts their observations
    /// through `observe` (which calls back with each list's delivered sum) and waits for every
    /// initial value.
    func start(observe: (_ list: Int, _ delivered: @escaping @Sendable (Int) -> Void) -> Void) async {
        arrivals.expect(Dictionary(uniqueKeysWithValues: (0..<ObservationWorkloads.lists).map { ($0, 0) }))
        for list in 0..<ObservationWorkloads.lists {
            observe(list) { [arrivals] sum in arrivals.arrive(list, sum) }
        }
        await arrivals.wait()
    }

    /// `count` writes in a row, then waits until every list delivered its final sum.
    func writeLoop(_ count: Int) async throws -> Int {
        let base = nextBase()
        for index in 0..<count { values[index % values.count] = base + index }
        arrivals.expect(Dictionary(uniqueKeysWithValues: (0..<ObservationWorkloads.lists).map { ($0, sum(of: $0)) }))
        for index in 0..<count {
            try write(index % values.count + 1, base + index)
        }
        await arrivals.wait()
        return count
    }

    /// `count` times: one write, then wait until its list delivered it.
    func roundTrips(_ count: Int) async throws -> Int {
        let base = nextBase()
        for round in 0..<count {
            let list = round % ObservationWorkloads.lists
            let index = list * ObservationWorkloads.itemsPerList + (round / ObservationWorkloads.lists) % ObservationWorkloads.itemsPerList
            values[index] = base + round
            arrivals.expect([list: sum(of: list)])
            try write(index + 1, base + round)
            await arrivals.wait()
        }
        return count
    }

    /// The values as stored.
    func storedValues() throws -> [Int] { try read() }

    /// A base value no earlier run used, so every run's final sums are new.
    private func nextBase() -> Int {
        runs += 1
        return runs * 1_000_000
    }

    private func sum(of list: Int) -> Int {
        values[(list * ObservationWorkloads.itemsPerList)..<((list + 1) * ObservationWorkloads.itemsPerList)].reduce(0, +)
    }

    /// ModelSync's side: a file `Database`, and `db.observe { … }`.
    static func ours(path: String) async throws -> ObservedLists {
        let db = try Database(path: path, models: [ListItem.self])
        try await db.write { db in
            for id in 1...ObservationWorkloads.items {
                var item = ListItem(id: id, listId: (id - 1) / ObservationWorkloads.itemsPerList, value: 0)
                try item.insert(db)
            }
        }
        let lists = ObservedLists(
            write: { id, value in
                try db.write { try $0.execute("UPDATE items SET value = ? WHERE id = ?", [.integer(Int64(value)), .integer(Int64(id))]) }
            },
            read: { try db.read { try ListItem.all($0, order: "id") }.map(\.value) }
        )
        await lists.start { list, delivered in
            let observation = db.observe { db in
                try ListItem.all(db, where: "listId = ?", [.integer(Int64(list))], order: "id")
            }
            Task {
                for try await items in observation { delivered(items.reduce(0) { $0 + $1.value }) }
            }
        }
        return lists
    }
}

/// Waits until each awaited list has delivered its expected sum.
final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var expected: [Int: Int] = [:]
    private var waiter: CheckedContinuation<Void, Never>?

    /// The sums to wait for, by list (set before the writes that produce them).
    func expect(_ sums: [Int: Int]) {
        lock.withLock { expected = sums }
    }

    /// A list's observation delivered `sum`.
    func arrive(_ list: Int, _ sum: Int) {
        let done: CheckedContinuation<Void, Never>? = lock.withLock {
            guard expected[list] == sum else { return nil }
            expected[list] = nil
            guard expected.isEmpty else { return nil }
            defer { waiter = nil }
            return waiter
        }
        done?.resume()
    }

    /// Returns once every expected sum arrived.
    func wait() async {
        await withCheckedContinuation { continuation in
            let done = lock.withLock {
                if expected.isEmpty { return true }
                waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
