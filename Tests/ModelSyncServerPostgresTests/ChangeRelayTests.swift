import ModelSyncJSON
import ModelSyncProtocol
@testable import ModelSyncServerPostgres
import Testing

/// The relay that feeds a PostgreSQL server's change streams: it reads only the collections its
/// streams watch, hands each stream its own, reads once for a queue of notifications, and never
/// moves past a change a stream that began meanwhile has not seen.
@Suite struct ChangeRelayTests {
    func change(_ sequence: Int, _ collection: String) -> SyncChange {
        SyncChange(sequence: sequence, collection: collection, id: .number(JSONNumber(sequence)), record: ["title": "t"])
    }

    /// The next `count` changes of a stream, in order.
    func next(_ count: Int, of stream: AsyncStream<SyncChange>) async -> [Int] {
        var iterator = stream.makeAsyncIterator()
        var sequences: [Int] = []
        for _ in 0..<count {
            guard let change = await iterator.next() else { break }
            sequences.append(change.sequence)
        }
        return sequences
    }

    @Test func eachStreamGetsTheCollectionsItWatches() async {
        let relay = ChangeRelay(delivered: 0)
        let (_, posts) = await relay.subscribe(to: ["posts"])
        let (_, all) = await relay.subscribe(to: nil)
        let plan = await relay.plan()
        #expect(plan.collections == nil && plan.after == 0)
        #expect(await relay.deliver([change(1, "posts"), change(2, "tags"), change(3, "posts")], as: plan))
        #expect(await next(2, of: posts) == [1, 3])
        #expect(await next(3, of: all) == [1, 2, 3])
    }

    @Test func onlyWatchedCollectionsAreRead() async {
        let relay = ChangeRelay(delivered: 0)
        #expect(await relay.plan().collections == [])
        let (first, _) = await relay.subscribe(to: ["posts"])
        let (second, _) = await relay.subscribe(to: ["tags", "posts"])
        #expect(await relay.plan().collections == ["posts", "tags"])
        await relay.unsubscribe(second)
        #expect(await relay.plan().collections == ["posts"])
        let (_, _) = await relay.subscribe(to: nil)
        #expect(await relay.plan().collections == nil)
        await relay.unsubscribe(first)
        #expect(await relay.plan().collections == nil)
    }

    /// A read planned before a stream began to watch another collection left that collection
    /// out: handing out its changes would move the relay past the new collection's changes up to
    /// there, which the new stream's backlog (read once it subscribed) may not hold either.
    @Test func aReadPlannedBeforeAStreamWidenedTheCollectionsIsReadAgain() async {
        let relay = ChangeRelay(delivered: 0)
        let (_, posts) = await relay.subscribe(to: ["posts"])
        let stale = await relay.plan()
        let (_, tags) = await relay.subscribe(to: ["tags"])
        #expect(await !relay.deliver([change(1, "posts")], as: stale))
        #expect(await relay.delivered == 0)
        // Read again, with the new collection.
        let fresh = await relay.plan()
        #expect(fresh.collections == ["posts", "tags"] && fresh.after == 0)
        #expect(await relay.deliver([change(1, "posts"), change(2, "tags")], as: fresh))
        #expect(await next(1, of: posts) == [1])
        #expect(await next(1, of: tags) == [2])
        // A stream of collections already read changes nothing for a read under way.
        let planned = await relay.plan()
        let (_, more) = await relay.subscribe(to: ["tags"])
        #expect(await relay.deliver([change(3, "tags")], as: planned))
        #expect(await next(1, of: more) == [3])
    }

    /// The relay starts where the server opened: a stream subscribed at once gets every later
    /// commit, and shutting down ends the streams.
    @Test func aStreamGetsEveryCommitAfterTheServerOpened() async {
        let relay = ChangeRelay(delivered: 7)
        let (_, stream) = await relay.subscribe(to: nil)
        let plan = await relay.plan()
        #expect(plan.collections == nil && plan.after == 7)
        #expect(await relay.deliver([change(8, "posts")], as: relay.plan()))
        #expect(await next(1, of: stream) == [8])

        let stopped = ChangeRelay(delivered: 0)
        let (_, ended) = await stopped.subscribe(to: ["posts"])
        await stopped.finish()
        #expect(await next(1, of: ended) == [])
    }

    /// Notifications queue up while a read runs: one read serves them all.
    @Test func notificationsAlreadyReadAreSkipped() async {
        let relay = ChangeRelay(delivered: 10)
        // No stream: the relay moves past without reading.
        #expect(await relay.skip(to: 12))
        #expect(await relay.delivered == 12)
        let (_, stream) = await relay.subscribe(to: ["posts"])
        #expect(await !relay.skip(to: 14))
        // The read saw the state row at 15 (another collection's changes, or records changed
        // again since): past it.
        #expect(await relay.deliver([change(13, "posts")], as: relay.plan(), through: 15))
        #expect(await relay.skip(to: 14))
        #expect(await relay.skip(to: 15))
        #expect(await !relay.skip(to: 16))
        #expect(await !relay.skip(to: nil))
        #expect(await next(1, of: stream) == [13])
    }
}
