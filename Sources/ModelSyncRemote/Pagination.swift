import Foundation
import ModelSyncCore
import ModelSyncJSON

/// How a collection is split into pages.
public enum Pagination: Sendable {
    /// `?_start=0&_limit=20`, then `_start=20`, … until a short page or `X-Total-Count`.
    case offset(limit: Int, offsetParameter: String = "_start", limitParameter: String = "_limit")
    /// `?_page=1&_limit=20`, then `_page=2`, … until a short page or `X-Total-Count`.
    case pages(size: Int, pageParameter: String = "_page", sizeParameter: String = "_limit", firstPage: Int = 1)
    /// The first request as given, then the URL of the `Link` header's `rel="next"` until
    /// there is none (GitHub, json-server).
    case linkHeader
    /// An envelope that names the next page, like Django REST Framework's
    /// `{"count": …, "next": "…?page=2", "previous": …, "results": […]}`.
    case nextURL(results: JSONPath = "results", next: JSONPath = "next")
}

/// Why a ``RemotePages`` sequence ended.
public enum PagingEnd: Sendable, Equatable {
    /// The collection ran out: an empty or short page, `X-Total-Count` reached, or no next link.
    case complete
    /// A page held more items than asked for: the server ignores the paging parameters and
    /// probably sent the whole collection. That page was the last one yielded.
    case pageLongerThanRequested(requested: Int, received: Int)
    /// A page repeated the one before it, or a next link led back to a page already fetched:
    /// the server ignores the paging parameters. The repeat was not yielded.
    case pageRepeated
}

/// A collection as an `AsyncSequence` of pages, fetched one at a time as you iterate.
///
/// ```swift
/// let pages = api.pages(Post.self, pagination: .pages(size: 20))
/// for try await page in pages { … }
/// if pages.end != .complete { … }   // the server ignored the paging parameters
/// ```
///
/// Servers that ignore the paging parameters (json-server clones, many real APIs) would send
/// the same items forever; the sequence ends when a page is longer than asked for or repeats
/// the previous one, logs a warning, and says why in ``end``.
public struct RemotePages<M: RemoteResource>: AsyncSequence, Sendable {
    public typealias Element = [M]

    let store: RemoteStore
    let parameters: RemoteParameters
    let pagination: Pagination
    let options: RequestOptions
    /// The URL of the first page from its parameters: the collection's, or a nested one's.
    let firstURL: @Sendable (RemoteStore, RemoteParameters) async throws -> URL
    private let ending = Locked<PagingEnd?>(nil)

    init(
        store: RemoteStore, parameters: RemoteParameters, pagination: Pagination, options: RequestOptions,
        firstURL: @escaping @Sendable (RemoteStore, RemoteParameters) async throws -> URL
    ) {
        self.store = store
        self.parameters = parameters
        self.pagination = pagination
        self.options = options
        self.firstURL = firstURL
    }

    /// Why the latest iteration ended; nil until one has.
    public var end: PagingEnd? { ending.current }

    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: self)
    }

    /// Fetches the next page on each call.
    public struct Iterator: AsyncIteratorProtocol {
        private let pages: RemotePages
        /// The next page's position: an offset or page number, or a URL; nil when done.
        private var position: Position?
        private enum Position { case number(Int), url(URL) }
        /// The previous page's body and item ids, to notice a server that answers every page
        /// alike (the ids also when the body differs, e.g. by a timestamp in an envelope).
        private var previousBody: [UInt8]?
        private var previousIDs: [RemoteID]?
        /// The URLs fetched so far, for the link-following kinds.
        private var visited: Set<String> = []

        init(pages: RemotePages) {
            self.pages = pages
            pages.ending.withLock { $0 = nil }
            // `.number(0)` for the link-following kinds means "the first request, as given".
            if case .pages(_, _, _, let first) = pages.pagination {
                position = .number(first)
            } else {
                position = .number(0)
            }
        }

        public mutating func next() async throws -> [M]? {
            guard let current = position else { return nil }
            position = nil
            let store = pages.store
            var parameters = pages.parameters
            var key = M.remote.listKey
            switch pages.pagination {
            case .offset(let limit, let offsetName, let limitName):
                if case .number(let offset) = current { parameters[offsetName] = .number(JSONNumber(offset)) }
                parameters[limitName] = .number(JSONNumber(limit))
            case .pages(let size, let pageName, let sizeName, _):
                if case .number(let page) = current { parameters[pageName] = .number(JSONNumber(page)) }
                parameters[sizeName] = .number(JSONNumber(size))
            case .linkHeader:
                break
            case .nextURL(let results, _):
                key = results
            }
            let url: URL
            if case .url(let next) = current {
                url = next
            } else {
                url = try await pages.firstURL(store, parameters)
            }
            visited.insert(url.absoluteString)
            let result = try await store.getList(M.self, url: url, at: key, pages.options)
            if result.value.isEmpty { return finish(.complete) }
            let ids = itemIDs(result.value)
            if result.response.body == previousBody || (ids != nil && ids == previousIDs) { return finish(.pageRepeated, url: url) }
            previousBody = result.response.body
            previousIDs = ids
            position = nextPosition(after: current, result, url: url)
            return result.value
        }

        /// The primary keys of a page's items; nil when any has none.
        private func itemIDs(_ items: [M]) -> [RemoteID]? {
            var ids: [RemoteID] = []
            ids.reserveCapacity(items.count)
            for item in items {
                guard let id = try? item.remoteID(encoder: pages.store.options.encoder) else { return nil }
                ids.append(id)
            }
            return ids
        }

        /// Ends the sequence, saying why.
        private mutating func finish(_ end: PagingEnd, url: URL? = nil) -> [M]? {
            position = nil
            previousBody = nil
            previousIDs = nil
            pages.ending.withLock { $0 = end }
            if end != .complete {
                pages.store.options.logger.warning(
                    "the server ignores the paging parameters; paging stopped",
                    metadata: ["end": "\(end)", "url": "\(url?.absoluteString ?? "")"])
            }
            return nil
        }

        private mutating func nextPosition(after current: Position, _ result: RemoteResult<[M]>, url: URL) -> Position? {
            let count = result.value.count
            let total = result.response.headers["X-Total-Count"].flatMap(Int.init)
            let next: Position?
            switch (pages.pagination, current) {
            case (.offset(let limit, _, _), .number(let offset)):
                if count > limit { return end(.pageLongerThanRequested(requested: limit, received: count), url) }
                let (following, overflow) = offset.addingReportingOverflow(count)
                next = count < limit || overflow || total.map({ following >= $0 }) == true ? nil : .number(following)
            case (.pages(let size, _, _, let first), .number(let page)):
                if count > size { return end(.pageLongerThanRequested(requested: size, received: count), url) }
                let (pagesSeen, overflow) = (page - first).addingReportingOverflow(1)
                let (seen, overflow2) = pagesSeen.multipliedReportingOverflow(by: size)
                let (following, overflow3) = page.addingReportingOverflow(1)
                next = count < size || overflow || overflow2 || overflow3 || total.map({ seen >= $0 }) == true ? nil : .number(following)
            case (.linkHeader, _):
                next = result.response.headers["Link"].flatMap { Self.nextLink($0, relativeTo: url) }.map(Position.url)
            case (.nextURL(_, let key), _):
                let body = try? JSONValue(parsing: result.response.body)
                next = body?[key]?.stringValue.flatMap { URL(string: $0, relativeTo: url)?.absoluteURL }.map(Position.url)
            default:
                next = nil
            }
            if case .url(let link)? = next, visited.contains(link.absoluteString) { return end(.pageRepeated, url) }
            if next == nil { pages.ending.withLock { $0 = .complete } }
            return next
        }

        /// Records why the sequence ends after the page just fetched.
        private mutating func end(_ reason: PagingEnd, _ url: URL) -> Position? {
            _ = finish(reason, url: url)
            return nil
        }

        /// The `rel="next"` target of a `Link` header.
        static func nextLink(_ header: String, relativeTo url: URL) -> URL? {
            for link in header.split(separator: ",") {
                let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">"),
                    parts.dropFirst().contains(where: { $0.replacingOccurrences(of: " ", with: "") == "rel=\"next\"" || $0 == "rel=next" })
                else { continue }
                return URL(string: String(target.dropFirst().dropLast()), relativeTo: url)?.absoluteURL
            }
            return nil
        }
    }
}
