import Foundation
import ModelSyncRemote
import ModelSyncServer
import Testing

/// A post of the sample server's `posts` collection, with rules.
@Model
struct CheckedPost: Equatable {
    var id: Int?
    var userId: Int
    var title: String
    @JSON("body") var text: String
}

extension CheckedPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

extension CheckedPost: Validatable {
    static let validator = Validator<CheckedPost> {
        Validate(\.title, .required("Enter a title"))
        Validate(\.text, .required("Enter a text"))
    }
}

/// Keeps the body of every request sent, after the other interceptors.
private final class BodyRecorder: RemoteInterceptor, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [String] = []

    var bodies: [String] { lock.withLock { recorded } }

    func prepare(_ request: inout RemoteRequest) async throws {
        let text = String(decoding: request.body ?? [], as: UTF8.self)
        lock.withLock { recorded.append(text) }
    }
}

@Suite("RemoteStore: saving validates first; server field errors as ValidationError")
struct RemoteValidationTests {
    /// The error `body` throws, as a `ValidationError` (a test failure otherwise).
    private func validationError(_ body: () async throws -> Void) async -> ValidationError? {
        do {
            try await body()
            Issue.record("expected a ValidationError")
        } catch let error as ValidationError {
            return error
        } catch {
            Issue.record("expected a ValidationError, got \(error)")
        }
        return nil
    }

    @Test func noInvalidModelReachesTheServer() async throws {
        try await withStore { store, server async throws in
            let loaded = CheckedPost(id: 1, userId: 1, title: "Loaded", text: "Text")
            var new = CheckedPost(userId: 1, title: "", text: " ")
            #expect(await validationError { try await store.save(&new) }?.fields == ["title", "text"])
            var edited = loaded
            edited.title = ""
            #expect(await validationError { try await store.save(&edited) }?[\CheckedPost.title] == ["Enter a title"])
            #expect(await validationError { try await store.save(&edited, patchingChangesFrom: loaded) }?.fields == ["title"])
            var child = CheckedPost(userId: 1, title: "", text: "")
            #expect(await validationError { try await store.create(&child, in: loaded) }?.fields == ["title", "text"])
            #expect(server.recordedRequests.isEmpty)
            #expect(new.id == nil && edited.title.isEmpty)
        }
    }

    @Test func serverFieldErrorsReadLikeLocalOnes() async throws {
        try await withStore { store, server async throws in
            var invalid = CheckedPost(userId: 1, title: "", text: "")
            let local = await validationError { try await store.save(&invalid) }
            // Skip the local rules, so the server answers with its own field errors.
            server.inject(Fault(.status(422, body: ["errors": ["body": ["can't be blank"], "title": ["is too short", "is taken"]]])))
            let error = await remoteError { try await store.save(&invalid, options: RequestOptions(validates: false)) }
            let remote = try #require(error?.validationError)
            #expect(server.recordedRequests.count == 1)
            #expect(remote.model == "CheckedPost")
            #expect(remote.fields == local?.fields)
            #expect(remote[\CheckedPost.title] == ["is too short", "is taken"])
            #expect(remote["text"] == ["can't be blank"])
            #expect(remote.failures.first { $0.fields == ["text"] }?.jsonKeys == ["body"])
            #expect(invalid.id == nil)
        }
    }

    @Test func otherErrorsHaveNoValidationError() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(422)))
            var post = CheckedPost(userId: 1, title: "Title", text: "Text")
            let error = await remoteError { try await store.save(&post) }
            #expect(error?.status == 422)
            #expect(error?.validationError == nil)
        }
    }

    @Test func aPatchOfADraftHoldsExactlyItsChangedFields() async throws {
        let recorder = BodyRecorder()
        try await withStore(configure: { $0.interceptors = [recorder] }) { store, server async throws in
            let loaded = try await store.fetch(CheckedPost.self, id: 1)
            var draft = Draft(editing: loaded)
            draft.text = "Edited"
            let expected = String(decoding: try draft.patchBody(), as: UTF8.self)
            var edited = try draft.commit()
            try await store.save(&edited, patchingChangesFrom: loaded)
            #expect(server.recordedRequests.last?.method == "PATCH")
            #expect(recorder.bodies.last == expected)
            #expect(expected == #"{"body":"Edited"}"#)
            #expect(edited.text == "Edited" && edited.title == loaded.title)
        }
    }
}
