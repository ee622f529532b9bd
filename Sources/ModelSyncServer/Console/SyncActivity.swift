import Foundation
import ModelSyncCore
import ModelSyncJSON

/// What the console's Sync view shows of a running server: the change streams open now, and
/// the answers of the latest writes (``recentWrites``). Kept in memory only, per server process,
/// and bounded: one entry per open stream (which ``ChangeStreamLimits`` bound), and at most
/// ``capacity`` writes, the oldest dropped first.
package final class SyncActivity: Sendable {
    /// An open change stream: whose, since when, and which collections it follows.
    package struct OpenStream: Sendable {
        package var user: String?
        package var role: String?
        package var address: String
        package var opened: Date
        /// Nil: every collection.
        package var collections: [String]?
    }

    /// One write's answer, as the backend gave it.
    package struct WriteAnswer: Sendable {
        package var at: Date
        package var user: String?
        package var method: String
        package var collection: String
        /// The id written to (a create's as its body or answer names it); nil when neither does.
        package var id: String?
        package var status: Int
        /// Whether the answer was a replay of a remembered one (`Idempotency-Key`).
        package var replayed: Bool
        /// `POST /_batch` or a request of its own.
        package var inBatch: Bool
    }

    /// How many writes' answers are kept.
    package let capacity: Int
    private let streams = Locked<[Int: OpenStream]>([:])
    private let nextStream = Locked(0)
    private let writes: Locked<(entries: [WriteAnswer], next: Int)>

    package init(capacity: Int = 200) {
        self.capacity = max(1, capacity)
        writes = Locked((entries: [], next: 0))
    }

    /// The streams open now, oldest first.
    package var openStreams: [OpenStream] {
        streams.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
    }

    /// The writes' answers kept, newest first.
    package var recentWrites: [WriteAnswer] {
        writes.withLock { ring in
            // `next` is where the oldest is once the ring is full.
            let ordered = ring.entries.count < capacity ? ring.entries : Array(ring.entries[ring.next...] + ring.entries[..<ring.next])
            return ordered.reversed()
        }
    }

    /// Registers an open stream; it stays listed while the returned registration lives.
    package func streamOpened(_ stream: OpenStream) -> StreamRegistration {
        let id = nextStream.withLock { next in
            next += 1
            return next
        }
        streams.withLock { $0[id] = stream }
        return StreamRegistration(id: id, activity: self)
    }

    fileprivate func streamClosed(_ id: Int) {
        streams.withLock { $0[id] = nil }
    }

    /// Keeps the answers of `operations` (in order, as `outcomes` gives them), dropping the
    /// oldest past ``capacity``.
    package func record(_ operations: [ItemOperation], _ outcomes: [Result<ItemWrite.Result, APIError>], inBatch: Bool, at now: Date = Date()) {
        let answers = zip(operations, outcomes).map { operation, outcome in
            Self.answer(operation, outcome, inBatch: inBatch, at: now)
        }
        writes.withLock { ring in
            for answer in answers {
                if ring.entries.count < capacity {
                    ring.entries.append(answer)
                } else {
                    ring.entries[ring.next] = answer
                    ring.next = (ring.next + 1) % capacity
                }
            }
        }
    }

    private static func answer(_ operation: ItemOperation, _ outcome: Result<ItemWrite.Result, APIError>, inBatch: Bool, at now: Date) -> WriteAnswer {
        let (method, id): (String, String?)
        switch operation.write {
        case .create(_, let body): (method, id) = ("POST", body["id"].flatMap(scalarText))
        case .update(_, let given, _, let merge): (method, id) = (merge ? "PATCH" : "PUT", given)
        case .delete(_, let given): (method, id) = ("DELETE", given)
        }
        var answer = WriteAnswer(
            at: now, user: operation.access?.caller.userID.map(bounded), method: method, collection: bounded(operation.write.collection),
            id: id.map(bounded), status: 500, replayed: false, inBatch: inBatch)
        switch outcome {
        case .success(let result):
            answer.status = result.status
            answer.replayed = result.replayed
            if answer.id == nil { answer.id = result.body["id"].flatMap(scalarText).map(bounded) }
        case .failure(let error):
            answer.status = Int(error.status.code)
        }
        return answer
    }

    /// Text cut to 200 characters: what a client sent is kept, but never without bound.
    private static func bounded(_ text: String) -> String {
        text.count <= 200 ? text : String(text.prefix(200)) + "…"
    }

    /// An open stream's place in the list: removed when the last reference to it goes, however
    /// the stream ended.
    package final class StreamRegistration: Sendable {
        private let id: Int
        private let activity: SyncActivity

        fileprivate init(id: Int, activity: SyncActivity) {
            (self.id, self.activity) = (id, activity)
        }

        deinit { activity.streamClosed(id) }
    }
}

extension SyncActivity.OpenStream {
    var json: JSONValue {
        [
            "user": user.map(JSONValue.string) ?? .null, "role": role.map(JSONValue.string) ?? .null, "address": .string(address),
            "opened": .string(SyncActivity.timestamp(opened)), "collections": collections.map { .array($0.map(JSONValue.string)) } ?? .null,
        ]
    }
}

extension SyncActivity.WriteAnswer {
    var json: JSONValue {
        [
            "at": .string(SyncActivity.timestamp(at)), "user": user.map(JSONValue.string) ?? .null, "method": .string(method),
            "collection": .string(collection), "id": id.map(JSONValue.string) ?? .null, "status": .number(JSONNumber(status)),
            "replayed": .bool(replayed), "conflict": .bool(status == 409 || status == 412), "batch": .bool(inBatch),
        ]
    }
}

extension SyncActivity {
    /// A time as RFC 3339 text in UTC, to the millisecond.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
