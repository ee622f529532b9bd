@testable import ModelSync
import Testing

/// What a push may send together, decided by ``PushScheduler`` alone: no server, no database.
/// Entries are notes and their replies (a reply's `noteId` is a `BelongsTo` foreign key).
@Suite struct PushSchedulerTests {
    static let models: [String: any SyncedModel.Type] = [SyncNote.schema.name: SyncNote.self, SyncReply.schema.name: SyncReply.self]

    static func note(_ sequence: Int64, _ operation: OutboxOperation, id: Int, state: OutboxEntryState = .pending) -> OutboxRecord {
        OutboxRecord(
            id: sequence, model: SyncNote.schema.name, localKey: JSONValue(integerLiteral: id), operation: operation,
            body: ["id": JSONValue(integerLiteral: id), "title": "t"], changedFields: [], state: state)
    }

    static func reply(_ sequence: Int64, _ operation: OutboxOperation, id: Int, noteId: Int) -> OutboxRecord {
        OutboxRecord(
            id: sequence, model: SyncReply.schema.name, localKey: JSONValue(integerLiteral: id), operation: operation,
            body: ["id": JSONValue(integerLiteral: id), "noteId": JSONValue(integerLiteral: noteId), "text": "r"], changedFields: [])
    }

    static func scheduler(_ rows: [OutboxRecord], truncated: Bool = false) throws -> PushScheduler {
        PushScheduler(entries: try rows.map { ($0, try OutboxDependencies($0, models)) }, generation: 0, truncated: truncated)
    }

    /// The sequences a choice starts, or nil for `.readOn`.
    static func started(_ choice: PushScheduler.Choice) -> [Int64]? {
        switch choice {
        case .start(let entries): entries.map(\.sequence)
        case .readOn: nil
        }
    }

    @Test func independentEntriesStartTogetherUpToTheLimit() throws {
        let scheduler = try Self.scheduler([Self.note(1, .create, id: 1), Self.note(2, .create, id: 2), Self.note(3, .update, id: 3)])
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [])) == [1, 2, 3])
        #expect(Self.started(scheduler.next(limit: 2, inFlight: [])) == [1, 2])
    }

    @Test func aRowsChangesGoOneAfterAnother() throws {
        var scheduler = try Self.scheduler([Self.note(1, .create, id: 1), Self.note(2, .update, id: 1), Self.note(3, .update, id: 2)])
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [])) == [1, 3])
        // The first in flight still holds back the second.
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [1, 3])) == [])
        scheduler.finish(1)
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [3])) == [2])
    }

    @Test func aChildWaitsForItsParentsCreateAndAParentsDeleteForItsChildren() throws {
        var scheduler = try Self.scheduler([
            Self.note(1, .create, id: 1), Self.reply(2, .create, id: 10, noteId: 1), Self.reply(3, .create, id: 11, noteId: 2),
        ])
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [])) == [1, 3])
        scheduler.finish(1)
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [3])) == [2])

        let deleting = try Self.scheduler([Self.reply(1, .update, id: 10, noteId: 1), Self.note(2, .delete, id: 1)])
        #expect(Self.started(deleting.next(limit: 10, inFlight: [])) == [1])
    }

    @Test func aParkedEntryIsNotSentAndHoldsBackWhatDependsOnIt() throws {
        let scheduler = try Self.scheduler([
            Self.note(1, .create, id: 1, state: .parked), Self.reply(2, .create, id: 10, noteId: 1), Self.note(3, .update, id: 3),
        ])
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [])) == [3])
    }

    @Test func aTruncatedReadWhoseEntriesAllStartedReadsOn() throws {
        var scheduler = try Self.scheduler([Self.note(1, .create, id: 1), Self.note(2, .create, id: 2)], truncated: true)
        #expect(Self.started(scheduler.next(limit: 10, inFlight: [1, 2])) == nil)
        #expect(!scheduler.isExhausted)
        scheduler.finish(1)
        scheduler.finish(2)
        #expect(scheduler.isExhausted)
        // An entry waiting for one in flight: wait rather than read on.
        let waiting = try Self.scheduler([Self.note(1, .create, id: 1), Self.note(2, .update, id: 1)], truncated: true)
        #expect(Self.started(waiting.next(limit: 10, inFlight: [1])) == [])
        // The whole queue read: nothing to start is nothing to read.
        let whole = try Self.scheduler([Self.note(1, .create, id: 1)])
        #expect(Self.started(whole.next(limit: 10, inFlight: [1])) == [])
    }
}
