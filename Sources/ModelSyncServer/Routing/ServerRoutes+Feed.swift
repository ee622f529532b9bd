import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore
import ServiceLifecycle

/// The change feed: `GET /_changes`, `GET /<collection>?_since=`, and the live stream
/// `GET /_changes/stream` (Server-Sent Events).
extension ServerRoutes {
    package static let defaultFeedLimit = 1_000
    package static let maximumFeedLimit = 10_000

    /// `{"changes": [...], "next": "<cursor>", "more": false}`: the changes after the cursor,
    /// oldest first. `collections` nil reads the `collections` parameter (all when absent).
    func feed(_ parameters: QueryParameters, collections: Set<String>?, visibility: Visibility) async throws -> Response {
        let isCollection = collections != nil
        let cursor = try FeedCursor(parameters.values(isCollection ? "_since" : "since").first)
        let limitText = parameters.values(isCollection ? "_limit" : "limit").first
        guard let limit = limitText.map(Int.init) ?? Self.defaultFeedLimit, limit > 0 else {
            throw APIError.badRequest("the feed's limit must be a positive integer")
        }
        let names = collections ?? Self.collectionFilter(parameters)
        let page = try await backend.changes(after: cursor, in: names, limit: min(limit, Self.maximumFeedLimit), visibility: visibility)
        return Self.json(SyncFeedPage(changes: page.changes, next: String(page.next), more: page.more).json, status: .ok)
    }

    /// A `text/event-stream` of the changes after the cursor (`since`, or `Last-Event-ID`),
    /// then of every change as it is committed, until the client goes or the server stops.
    func stream(_ parameters: QueryParameters, request: Request, visibility: Visibility) async throws -> Response {
        let cursor = try FeedCursor(request.headers[.lastEventID] ?? parameters.values("since").first)
        let names = Self.collectionFilter(parameters)
        let backend = backend
        let keepAlive = options.keepAliveInterval
        // Subscribed before the backlog is read, so that nothing committed in between is lost.
        let (subscription, live) = await backend.subscribe()
        var backlog: [SyncChange] = []
        var since: Int
        do {
            var page = try await backend.changes(after: cursor, in: names, limit: Self.maximumFeedLimit, visibility: visibility)
            backlog = page.changes
            while page.more {
                page = try await backend.changes(after: .after(page.next), in: names, limit: Self.maximumFeedLimit, visibility: visibility)
                backlog += page.changes
            }
            // What the client has seen: its cursor, resolved (`now` is the current sequence).
            switch cursor {
            case .after(let given): since = given
            case .now: since = backlog.first.map { $0.sequence - 1 } ?? page.next
            }
        } catch {
            await backend.unsubscribe(subscription)
            throw error
        }
        enum Event: Sendable {
            case change(SyncChange)
            case keepAlive
        }
        let (events, emit) = AsyncStream.makeStream(of: Event.self)
        let (seen, backlogChanges) = (since, backlog)
        return Response(status: .ok, headers: Self.streamHeaders, body: ResponseBody { writer in
            let forwarding = Task {
                for await change in live { emit.yield(.change(change)) }
                emit.finish()
            }
            let ticking = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: keepAlive)
                    emit.yield(.keepAlive)
                }
            }
            defer {
                forwarding.cancel()
                ticking.cancel()
            }
            try await withGracefulShutdownHandler {
                var sent = seen
                for change in backlogChanges {
                    try await writer.write(Self.event(change))
                    sent = change.sequence
                }
                for await event in events {
                    switch event {
                    case .change(let change):
                        guard change.sequence > sent, names?.contains(change.collection) ?? true,
                              let shown = Self.shown(change, visibility) else { continue }
                        try await writer.write(Self.event(shown))
                        sent = change.sequence
                    case .keepAlive:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
            } onGracefulShutdown: {
                emit.finish()
            }
            await backend.unsubscribe(subscription)
            try await writer.finish(nil)
        })
    }

    /// `HEAD /_changes/stream`: the stream's headers, or the refusal a `GET` would meet (400,
    /// 410), without subscribing.
    func streamHead(_ parameters: QueryParameters, request: Request, visibility: Visibility) async throws -> Response {
        let cursor = try FeedCursor(request.headers[.lastEventID] ?? parameters.values("since").first)
        _ = try await backend.changes(after: cursor, in: Self.collectionFilter(parameters), limit: 1, visibility: visibility)
        return Response(status: .ok, headers: Self.streamHeaders)
    }

    private static var streamHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return headers
    }

    /// The live change as it reaches a reader, if it does: a record it may see, or a deletion in a
    /// collection whose every row it reads. (A deletion of one of its own rows among others'
    /// reaches it through the feed, whose tombstones name their owner: the live change does not.)
    private static func shown(_ change: SyncChange, _ visibility: Visibility) -> SyncChange? {
        let rows = visibility.rows(of: change.collection)
        guard change.record != nil else { return rows == .everything ? change : nil }
        return visibility.shown(change, rows: rows)
    }

    static func event(_ change: SyncChange) -> ByteBuffer {
        var bytes = Array("id: \(change.sequence)\nevent: change\ndata: ".utf8)
        bytes += change.json.jsonBytes()
        bytes += Array("\n\n".utf8)
        return ByteBuffer(bytes: bytes)
    }

    package static func collectionFilter(_ parameters: QueryParameters) -> Set<String>? {
        let names = parameters.values("collections").flatMap { $0.split(separator: ",").map(String.init) }
        return names.isEmpty ? nil : Set(names)
    }
}

