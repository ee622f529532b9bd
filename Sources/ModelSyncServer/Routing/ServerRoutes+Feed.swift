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
        // The limit before the cursor: a malformed request is 400 whatever its cursor's fate. Read
        // whole, as lists read theirs: an empty `limit=` (or `limit=5,6`) is no integer.
        let limit = try parameters.integer(isCollection ? "_limit" : "limit", minimum: 1) ?? Self.defaultFeedLimit
        let cursorText = parameters.values(isCollection ? "_since" : "since").first
        let cursor = try await feedCursor(cursorText, visibility)
        let names = collections ?? Self.collectionFilter(parameters)
        let pageLimit = min(limit, Self.maximumFeedLimit)
        let filter = isCollection ? try FeedFilter(parameters) : nil
        guard MembershipMoves(backend: backend, visibility: visibility) != nil || filter != nil, case .after(let since) = cursor else {
            let page = try await withHorizonBound(to: visibility) {
                try await backend.encodedChanges(after: cursor, in: names, limit: pageLimit, visibility: visibility)
            }
            return Self.json(bytes: page.body(next: Self.cursorText(page.next, visibility)), status: .ok)
        }
        let mark = try await catchUpMark(cursorText, since: since, visibility)
        let pending = try cursorText.flatMap { try Self.parseCursor($0).pending }
        let (unfiltered, rest) = try await changes(after: cursor, in: names, limit: pageLimit, visibility, movesAfter: mark, pending: pending)
        var page = unfiltered
        if let filter {
            let changes = page.changes
            // A pattern or a search costs what the caller asks: off the cooperative pool.
            page.changes = filter.query.scansText
                ? try await feedFilters.runOffPool { filter.apply(to: changes, departuresAfter: mark) }
                : filter.apply(to: changes, departuresAfter: mark)
        }
        // A page of a catch-up (more follow) names where it started, so that the next pages move
        // no rows the reader got already, and send no departures of rows it never sent; and
        // where the rows moving in that did not fit go on.
        var next = Self.cursorText(page.next, visibility)
        if page.more { next += (visibility.cursorTag == nil ? ".." : ".") + String(mark) }
        if let rest { next += ".\(rest.since).\(rest.after)" }
        return Self.json(bytes: EncodedFeedPage(page).body(next: next), status: .ok)
    }

    /// Under sharing rules, the sequence after which a membership change moves rows into this
    /// reader's view: the rows up to the cursor were read before it. That is the cursor itself,
    /// or, for a page of a catch-up, the mark its cursor carries (``parseCursor(_:)``), or, for a
    /// read from the start, the sequence now (taken before the read: an earlier mark moves more
    /// rows, never fewer).
    func catchUpMark(_ text: String?, since: Int, _ visibility: Visibility) async throws -> Int {
        if let text, let mark = try Self.parseCursor(text).mark { return mark }
        guard since == 0 else { return since }
        return try await backend.changes(after: .now, in: [], limit: 1, visibility: visibility).next
    }

    /// The cursor as sent. Under access rules a cursor names its reader (``Visibility/cursorTag``).
    /// One issued to another user or role, under other rules, before there were rules, or (on an
    /// open server) under rules since lifted, is answered 410 with a horizon of now: the client
    /// reads everything it may see again, dropping what it may no longer read, and follows the
    /// feed from there. The beginning (absent, empty, `0`) and `now` suit any reader.
    func feedCursor(_ text: String?, _ visibility: Visibility) async throws -> FeedCursor {
        guard let text, text != "now" else { return try FeedCursor(text) }
        let sequence: FeedCursor, given: Substring?
        do {
            (sequence, given, _, _) = try Self.parseCursor(text)
        } catch is DisorderedCursor {
            // Well formed, but its place in the rows moving in cannot have been issued: like a
            // cursor of another reader, read everything again.
            let now = try await backend.changes(after: .now, in: [], limit: 1, visibility: visibility).next
            throw APIError(status: 410, message: "the cursor's place in the rows moving in does not hold together; read everything again",
                           details: ["horizon": .string(Self.cursorText(now, visibility))])
        }
        // A tagged cursor on an open server comes from before its rules were lifted.
        let tag = visibility.cursorTag
        let issuedHere = given.map { given in tag.map { given.utf8.elementsEqual($0.utf8) } ?? false } ?? (tag == nil)
        if sequence == .after(0) || issuedHere { return sequence }
        let now = try await backend.changes(after: .now, in: [], limit: 1, visibility: visibility).next
        throw APIError(status: 410, message: "the cursor was issued to another reader or under other access rules; read everything again",
                       details: ["horizon": .string(Self.cursorText(now, visibility))])
    }

    /// A cursor's sequence, tag, catch-up mark and rows moving in still to send
    /// (`<seq>.<tag>.<mark>`, or `<seq>..<mark>` for a reader without a tag; under sharing rules
    /// `<seq>.<tag>.<mark>.<since>.<after>`, ``PendingMoves``), checked against the document's
    /// cursor pattern (a tag is what `cursorText` writes: 16 hex digits; the rest, digits, with
    /// `after` ≤ `since` < `seq`, else ``DisorderedCursor``); a 400 otherwise.
    static func parseCursor(_ text: String) throws -> (FeedCursor, tag: Substring?, mark: Int?, pending: PendingMoves?) {
        let parts = text.split(separator: ".", maxSplits: 4, omittingEmptySubsequences: false)
        let sequence = try FeedCursor(String(parts[0]))
        let numbers = parts.dropFirst(2).map { part in
            part.isEmpty || !part.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ? nil : Int(part) ?? Int.max
        }
        let tagged = parts.count >= 2 && !parts[1].isEmpty
        var pending: PendingMoves?
        if numbers.count == 3, let since = numbers[1], let after = numbers[2] { pending = PendingMoves(since: since, after: after) }
        var orderly = true
        if let pending {
            guard case .after(let through) = sequence else { throw APIError.badRequest("a feed cursor of rows moving in has a sequence number: got \(text)") }
            orderly = pending.after <= pending.since && pending.since < through
        }
        if parts.count >= 2 && (sequence == .now || !(tagged ? isCursorTag(parts[1]) : parts.count == 3)) || numbers.contains(nil) || numbers.count == 2 {
            throw APIError.badRequest("a feed cursor is a sequence number, optionally with a 16-digit hex tag, a mark and a place in the rows moving in: got \(text)")
        }
        // The document's pattern cannot say how the numbers order: such a cursor is well formed
        // (not a 400) but was never issued (``feedCursor(_:_:)`` answers 410).
        if !orderly { throw DisorderedCursor() }
        return (sequence, tagged ? parts[1] : nil, numbers.first ?? nil, pending)
    }

    /// A cursor of rows moving in whose numbers cannot have been issued together.
    struct DisorderedCursor: Error {}

    private static func isCursorTag(_ text: Substring) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// The cursor of a sequence value as this reader gets it.
    static func cursorText(_ sequence: Int, _ visibility: Visibility) -> String {
        cursorText(sequence, tag: visibility.cursorTag)
    }

    static func cursorText(_ sequence: Int, tag: String?) -> String {
        tag.map { "\(sequence).\($0)" } ?? String(sequence)
    }

    /// The backend's changes, a 410's horizon bound to the reader, with the rows its membership
    /// changes after `mark` (nil: after the cursor) move in and out (``MembershipMoves``), at
    /// most `limit` rows moving in a page: first those `pending` from the page before, then the
    /// feed after the cursor. The rows moving in that did not fit are pending for the next page.
    private func changes(
        after cursor: FeedCursor, in names: Set<String>?, limit: Int, _ visibility: Visibility, movesAfter mark: Int? = nil, pending: PendingMoves? = nil
    ) async throws -> (FeedPage, PendingMoves?) {
        guard let moves = MembershipMoves(backend: backend, visibility: visibility), case .after(let since) = cursor else {
            return (try await withHorizonBound(to: visibility) { try await backend.changes(after: cursor, in: names, limit: limit, visibility: visibility) }, nil)
        }
        // The moves read the feed too (a pending page from where its moves began, before the
        // horizon perhaps): their 410 names the reader's horizon as well.
        guard let pending else {
            return try await withHorizonBound(to: visibility) {
                let page = try await backend.changes(after: cursor, in: names, limit: limit, visibility: visibility)
                return try await moves.page(page, after: since, movesAfter: mark ?? since, in: names, limit: limit)
            }
        }
        let (moved, rest) = try await withHorizonBound(to: visibility) {
            try await moves.pendingPage(pending, through: since, movesAfter: mark ?? pending.since, in: names, limit: limit)
        }
        guard rest == nil, moved.count < limit else { return (FeedPage(changes: moved, more: true, next: since), rest) }
        // The moves done, the page goes on with the feed after them.
        let (page, next) = try await changes(after: cursor, in: names, limit: limit - moved.count, visibility, movesAfter: mark)
        return (FeedPage(changes: MembershipMoves.deduplicated(moved + page.changes), more: page.more, next: page.next), next)
    }

    /// Runs a read of the feed, binding a 410's horizon to the reader.
    private func withHorizonBound<T>(to visibility: Visibility, _ read: () async throws -> T) async throws -> T {
        do {
            return try await read()
        } catch var error as APIError where error.status == .gone && visibility.cursorTag != nil {
            if let horizon = error.details["horizon"]?.stringValue.flatMap({ Int($0) }) {
                error.details["horizon"] = .string(Self.cursorText(horizon, visibility))
            }
            throw error
        }
    }

    /// A `text/event-stream` of the changes after the cursor (`since`, or `Last-Event-ID`),
    /// then of every change as it is committed, until the client goes or the server stops.
    ///
    /// Under access rules a committed change only wakes the stream, which then reads its
    /// reader's feed from where it is: the feed alone knows whose deletion a tombstone is and
    /// whose view a row has left, so the stream sends exactly what the feed would.
    ///
    /// Bounded (``ServerOptions/changeStreamLimits``): a caller with as many streams open as it
    /// may is answered 429; a client that reads slower than changes come has its connection
    /// closed once its stream holds ``ChangeStreamLimits/bufferedEvents``, rather than the
    /// server holding them without limit (it reconnects with `Last-Event-ID`).
    func stream(_ parameters: QueryParameters, request: Request, context: SyncServerContext, visibility: Visibility) async throws -> Response {
        let cursor = try await feedCursor(request.headers[.lastEventID] ?? parameters.values("since").first, visibility)
        let limits = options.changeStreamLimits
        guard let place = openStreams.open(for: Self.streamOwner(context), limit: limits.streamsPerCaller) else {
            var error = APIError(
                status: .tooManyRequests,
                message: "too many change streams open for this caller (at most \(limits.streamsPerCaller ?? 0)); close one first")
            error.headers[.retryAfter] = "5"
            throw error
        }
        let channel = context.channel
        let names = Self.collectionFilter(parameters)
        let registration = activity.streamOpened(SyncActivity.OpenStream(
            user: context.caller.userID, role: context.caller.role, address: context.clientAddress, opened: Date(), collections: names.map { $0.sorted() }))
        let keepAlive = options.keepAliveInterval
        let tag = visibility.cursorTag
        // Subscribed before the backlog is read, so that nothing committed in between is lost.
        let (subscription, live) = await backend.subscribe(to: names)
        var backlog: [SyncChange] = []
        var since: Int
        do {
            // The backlog is one catch-up: its pages move only rows of memberships changed since it began.
            var mark: Int?
            if case .after(let given) = cursor, MembershipMoves(backend: backend, visibility: visibility) != nil {
                mark = try await catchUpMark(request.headers[.lastEventID] ?? parameters.values("since").first, since: given, visibility)
            }
            var (page, pending) = try await changes(after: cursor, in: names, limit: Self.maximumFeedLimit, visibility, movesAfter: mark)
            backlog = page.changes
            while page.more {
                (page, pending) = try await changes(after: .after(page.next), in: names, limit: Self.maximumFeedLimit, visibility, movesAfter: mark, pending: pending)
                backlog += page.changes
            }
            // What the client has seen: its cursor, resolved (`now` is the current sequence).
            switch cursor {
            case .after(let given): since = given
            case .now: since = backlog.first.map { $0.sequence - 1 } ?? page.next
            }
            if !visibility.isOpen { since = max(since, page.next) }
        } catch {
            await backend.unsubscribe(subscription)
            throw error
        }
        enum Event: Sendable {
            case change(SyncChange)
            case keepAlive
        }
        // Bounded: a client that stops reading holds up the writes below, and the events that
        // keep coming are not kept for it without limit. A full buffer closes the connection,
        // which fails the write it waits in.
        let (events, emit) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(limits.bufferedEvents))
        let overflow: @Sendable (AsyncStream<Event>.Continuation.YieldResult) -> Bool = { result in
            guard case .dropped = result else { return false }
            emit.finish()
            channel.close(mode: .all, promise: nil)
            return true
        }
        let (seen, backlogChanges) = (since, backlog)
        return Response(status: .ok, headers: Self.streamHeaders, body: ResponseBody { writer in
            // Held until the body ends (or is dropped unwritten): the caller's open stream, and
            // its line in the console's list.
            let held = (place, registration)
            defer { withExtendedLifetime(held) {} }
            let forwarding = Task {
                for await change in live {
                    if overflow(emit.yield(.change(change))) { break }
                }
                emit.finish()
            }
            let ticking = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: keepAlive)
                    if overflow(emit.yield(.keepAlive)) { break }
                }
            }
            defer {
                forwarding.cancel()
                ticking.cancel()
            }
            do {
                try await withGracefulShutdownHandler {
                    var sent = seen
                    for change in backlogChanges {
                        try await writer.write(Self.event(change, tag: tag))
                        sent = max(sent, change.sequence)
                    }
                    for await event in events {
                        switch event {
                        case .change(let change) where change.sequence > sent && visibility.isOpen:
                            sent = change.sequence
                            guard names?.contains(change.collection) ?? true else { continue }
                            try await writer.write(Self.event(change, tag: tag))
                        case .change(let change) where change.sequence > sent:
                            var (more, pending): (Bool, PendingMoves?) = (true, nil)
                            while more {
                                let (page, rest) = try await changes(after: .after(sent), in: names, limit: Self.maximumFeedLimit, visibility, pending: pending)
                                for change in page.changes { try await writer.write(Self.event(change, tag: tag)) }
                                (sent, more, pending) = (page.next, page.more, rest)
                            }
                        case .change:
                            continue
                        case .keepAlive:
                            try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                        }
                    }
                } onGracefulShutdown: {
                    emit.finish()
                }
            } catch {
                // A client gone (or cut off) mid-write: its subscription ends too, or the backend
                // would go on buffering changes for nobody.
                await backend.unsubscribe(subscription)
                throw error
            }
            await backend.unsubscribe(subscription)
            try await writer.finish(nil)
        })
    }

    /// Whose streams a stream counts among (``ChangeStreamLimits/streamsPerCaller``): the
    /// signed-in user's, or an anonymous client address's.
    static func streamOwner(_ context: SyncServerContext) -> String {
        if let userID = context.caller.userID { return "user \(userID)" }
        return "address " + (context.remoteAddress?.ipAddress ?? "unknown")
    }

    /// `HEAD /_changes/stream`: the stream's headers, or the refusal a `GET` would meet (400,
    /// 410), without subscribing.
    func streamHead(_ parameters: QueryParameters, request: Request, visibility: Visibility) async throws -> Response {
        let cursor = try await feedCursor(request.headers[.lastEventID] ?? parameters.values("since").first, visibility)
        _ = try await changes(after: cursor, in: Self.collectionFilter(parameters), limit: 1, visibility)
        return Response(status: .ok, headers: Self.streamHeaders)
    }

    private static var streamHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return headers
    }

    /// One change as an event, its id the reader's cursor after it (the `Last-Event-ID` to
    /// resume with).
    static func event(_ change: SyncChange, tag: String?) -> ByteBuffer {
        var bytes = Array("id: \(cursorText(change.sequence, tag: tag))\nevent: change\ndata: ".utf8)
        bytes += change.json.jsonBytes()
        bytes += Array("\n\n".utf8)
        return ByteBuffer(bytes: bytes)
    }

    package static func collectionFilter(_ parameters: QueryParameters) -> Set<String>? {
        let names = parameters.values("collections").flatMap { $0.split(separator: ",").map(String.init) }
        // A name with U+0000 is no collection a backend serves (PostgreSQL's queries cannot carry
        // it, and its change listener reads the streams' names): kept out of every read.
        return names.isEmpty ? nil : Set(names.filter { !$0.utf8.contains(0) })
    }
}

