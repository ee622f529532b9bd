import Foundation
import ModelSyncJSON
import ModelSyncServer
import ServerTestSupport
import Testing

@Suite("Query conventions: filters, operators, search, sorting, slicing, pages, embedding")
struct QueryTests {
    @Test(arguments: Backend.allCases) func filtersByField(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?userId=1").ids == [1, 2])
            #expect(try await send(.GET, "\(base)/posts?userId=2&views=20").ids == [3, 4])
            #expect(try await send(.GET, "\(base)/posts?author.name=Leanne").ids == [1, 2])
        }
    }

    @Test(arguments: Backend.allCases) func repeatedValuesAreAlternatives(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?id=1&id=4").ids == [1, 4])
        }
    }

    @Test(arguments: Backend.allCases) func comparisonOperators(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?views_gte=20").ids == [2, 3, 4])
            #expect(try await send(.GET, "\(base)/posts?views_lte=10").ids == [1, 5])
            #expect(try await send(.GET, "\(base)/posts?views_ne=20").ids == [1, 2, 5])
            #expect(try await send(.GET, "\(base)/posts?views_gt=5&views_lt=30").ids == [1, 3, 4])
        }
    }

    @Test(arguments: Backend.allCases) func likeIsARegularExpression(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?title_like=%5E(al%7Cga)").ids == [1, 3])
            #expect(try await send(.GET, "\(base)/posts?title_like=ALPHA").ids == [1])
        }
    }

    @Test(arguments: Backend.allCases) func fullTextSearch(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?q=RAY").ids == [3])
            #expect(try await send(.GET, "\(base)/posts?q=ervin").ids == [3, 4, 5])
        }
    }

    @Test(arguments: Backend.allCases) func sortsByOneOrSeveralFields(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?_sort=views").ids == [5, 1, 3, 4, 2])
            #expect(try await send(.GET, "\(base)/posts?_sort=views&_order=desc").ids == [2, 3, 4, 1, 5])
            #expect(try await send(.GET, "\(base)/posts?_sort=views,id&_order=desc,desc").ids == [2, 4, 3, 1, 5])
            #expect(try await send(.GET, "\(base)/posts?_sort=userId,-views").ids == [2, 1, 3, 4, 5])
        }
    }

    @Test(arguments: Backend.allCases) func slicesWithStartEndAndLimit(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let slice = try await send(.GET, "\(base)/posts?_start=1&_end=3")
            #expect(slice.ids == [2, 3])
            #expect(slice.header("X-Total-Count") == "5")
            #expect(try await send(.GET, "\(base)/posts?_start=3&_limit=10").ids == [4, 5])
            #expect(try await send(.GET, "\(base)/posts?_limit=2").ids == [1, 2])
            #expect(try await send(.GET, "\(base)/posts?_start=9").ids == [])
        }
    }

    @Test(arguments: Backend.allCases) func pagesWithLimitAndLinks(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let page = try await send(.GET, "\(base)/posts?_page=2&_limit=2&userId_ne=9")
            #expect(page.ids == [3, 4])
            #expect(page.header("X-Total-Count") == "5")
            let link = try #require(page.header("Link"))
            #expect(link.contains("_page=1&_limit=2&userId_ne=9>; rel=\"first\""))
            #expect(link.contains("_page=1&_limit=2&userId_ne=9>; rel=\"prev\""))
            #expect(link.contains("_page=3&_limit=2&userId_ne=9>; rel=\"next\""))
            #expect(link.contains("_page=3&_limit=2&userId_ne=9>; rel=\"last\""))
            let last = try await send(.GET, "\(base)/posts?_page=3&_per_page=2")
            #expect(last.ids == [5])
            #expect(last.header("Link")?.contains("rel=\"next\"") == false)
        }
    }

    @Test(arguments: Backend.allCases) func embedsChildrenAndExpandsParents(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let posts = try await send(.GET, "\(base)/posts?_embed=comments&id=1&id=3")
            #expect(posts.json?[0]?["comments"]?.arrayValue?.count == 2)
            #expect(posts.json?[1]?["comments"] == [])
            let comment = try await send(.GET, "\(base)/comments/3?_expand=post")
            #expect(comment.json?["post"]?["title"] == "beta")
            let post = try await send(.GET, "\(base)/posts/1?_embed=comments&_expand=user")
            #expect(post.json?["user"]?["name"] == "Leanne")
            #expect(post.json?["comments"]?.arrayValue?.count == 2)
        }
    }
}
