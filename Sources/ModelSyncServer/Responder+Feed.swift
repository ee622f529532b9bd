import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import NIOCore
import ServiceLifecycle

/// The change feed: `GET /_changes`, `GET /<collection>?_since=`, and the live stream
/// `GET /_changes/stream` (Server-Sent Events).
extension ServerResponder {
    static let defaultFeedLimit = 1_000
    static let maximumFeedLimit = 10_000

    /// `{"changes": [...], "next": "<cursor>", "more": false}`: the changes after the cursor,
    /// oldest first. `collections` nil reads the `collections` parameter (all when absent).
    func feed(_ parameters: QueryParameters, collections: Set<String>?, book: Bookkeeping) throws -> Response {
        let isCollection = collections != nil
        let since = try Self.cursor(parameters.values(isCollection ? "_since" : "since").first, book: book)
        let limitText = parameters.values(isCollection ? "_limit" : "limit").first
        guard let limit = limitText.map(Int.init) ?? Self.defaultFeedLimit, limit > 0 else {
            throw APIError.badRequest("the feed's limit must be a positive integer")
        }
        let names = collections ?? Self.collectionFilter(parameters)
        let (changes, more) = book.changes(after: since, in: names, limit: min(limit, Self.maximumFeedLimit))
        let next = more ? changes.last?.sequence ?? since : max(book.sequence, since)
        let body: JSONValue = ["changes": .array(changes.map(\.json)), "next": .string(String(next)), "more": .bool(more)]
        return Self.json(body, status: .ok)
    }

    /// A `text/event-stream` of the changes after the cursor (`since`, or `Last-Event-ID`),
    /// then of every change as it is committed, until the client goes or the server stops.
    func stream(_ parameters: QueryParameters, request: Request, book: Bookkeeping) async throws -> Response {
        let since = try Self.cursor(request.headers[.lastEventID] ?? parameters.values("since").first, book: book)
        let names = Self.collectionFilter(parameters)
        let store = store
        let keepAlive = options.keepAliveInterval
        // Subscribed before the backlog is read, so that nothing committed in between is lost.
        let (subscription, live) = await store.subscribe()
        let backlogBook = await store.snapshot().book
        let backlog = backlogBook.changes(after: since, in: names, limit: Int.max - 1).changes
        enum Event: Sendable {
            case change(Bookkeeping.Change)
            case keepAlive
        }
        let (events, emit) = AsyncStream.makeStream(of: Event.self)
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
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
                var sent = since
                for change in backlog {
                    try await writer.write(Self.event(change))
                    sent = change.sequence
                }
                for await event in events {
                    switch event {
                    case .change(let change):
                        guard change.sequence > sent, names?.contains(change.collection) ?? true else { continue }
                        try await writer.write(Self.event(change))
                        sent = change.sequence
                    case .keepAlive:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
            } onGracefulShutdown: {
                emit.finish()
            }
            await store.unsubscribe(subscription)
            try await writer.finish(nil)
        })
    }

    static func event(_ change: Bookkeeping.Change) -> ByteBuffer {
        var bytes = Array("id: \(change.sequence)\nevent: change\ndata: ".utf8)
        bytes += change.json.jsonBytes()
        bytes += Array("\n\n".utf8)
        return ByteBuffer(bytes: bytes)
    }

    /// A cursor: absent or empty is 0, `now` the current sequence; 410 below the horizon.
    static func cursor(_ text: String?, book: Bookkeeping) throws -> Int {
        let since: Int
        switch text {
        case nil, ""?: since = 0
        case "now"?: since = book.sequence
        case let text?:
            guard let value = Int(text), value >= 0 else { throw APIError.badRequest("a feed cursor is a non-negative integer or now, got \(text)") }
            since = value
        }
        guard since >= book.horizon else {
            throw APIError(status: 410, message: "the cursor is older than the deletions the server keeps; read everything again",
                           details: ["horizon": .string(String(book.horizon))])
        }
        return since
    }

    static func collectionFilter(_ parameters: QueryParameters) -> Set<String>? {
        let names = parameters.values("collections").flatMap { $0.split(separator: ",").map(String.init) }
        return names.isEmpty ? nil : Set(names)
    }
}

