import Foundation
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

/// A collection as an `AsyncSequence` of pages, fetched one at a time as you iterate.
///
/// ```swift
/// for try await page in api.pages(Post.self, pagination: .pages(size: 20)) { … }
/// ```
public struct RemotePages<M: RemoteResource>: AsyncSequence, Sendable {
    public typealias Element = [M]

    let store: RemoteStore
    let parameters: RemoteParameters
    let pagination: Pagination
    let options: RequestOptions

    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: self)
    }

    /// Fetches the next page on each call.
    public struct Iterator: AsyncIteratorProtocol {
        private let pages: RemotePages
        /// The next page's position: an offset or page number, or a URL; nil when done.
        private var position: Position?
        private enum Position { case number(Int), url(URL) }

        init(pages: RemotePages) {
            self.pages = pages
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
                url = try await store.resourceURL(M.self, [], parameters: store.mergedParameters(M.self, call: parameters))
            }
            let result = try await store.getList(M.self, url: url, at: key, pages.options)
            position = nextPosition(after: current, result, url: url)
            return result.value.isEmpty ? nil : result.value
        }

        private func nextPosition(after current: Position, _ result: RemoteResult<[M]>, url: URL) -> Position? {
            let count = result.value.count
            let total = result.response.headers["X-Total-Count"].flatMap(Int.init)
            switch (pages.pagination, current) {
            case (.offset(let limit, _, _), .number(let offset)):
                let next = offset + count
                return count < limit || total.map({ next >= $0 }) == true ? nil : .number(next)
            case (.pages(let size, _, _, let first), .number(let page)):
                let seen = (page - first + 1) * size
                return count < size || total.map({ seen >= $0 }) == true ? nil : .number(page + 1)
            case (.linkHeader, _):
                return result.response.headers["Link"].flatMap { Self.nextLink($0, relativeTo: url) }.map(Position.url)
            case (.nextURL(_, let next), _):
                let body = try? JSONValue(parsing: result.response.body)
                return body?[next]?.stringValue.flatMap { URL(string: $0, relativeTo: url)?.absoluteURL }.map(Position.url)
            default:
                return nil
            }
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
