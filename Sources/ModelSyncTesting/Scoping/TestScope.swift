import ModelSync
import ModelSyncServer
import Testing

/// The fixtures a trait hands to the test it scopes (Swift Testing): read them in the test.
///
/// ```swift
/// @Test(.testDatabase(models: [Post.self]))
/// func savesPosts() throws {
///     let db = try #require(TestScope.database)
/// }
/// ```
public enum TestScope {
    /// The database of ``TestFixtureTrait/testDatabase(_:models:migrations:configuration:)`` or
    /// ``TestFixtureTrait/rollback(_:)``; nil outside such a test.
    @TaskLocal public static var database: Database?
    /// The server of ``TestFixtureTrait/testServer(data:options:)`` or ``TestFixtureTrait/testServer(_:)``; nil
    /// outside such a test.
    @TaskLocal public static var server: TestServer?
}

/// A Swift Testing trait that runs each test inside a fixture's scope (a database or a
/// server, handed over in ``TestScope``): see ``TestFixtureTrait/testDatabase(_:models:migrations:configuration:)``,
/// ``TestFixtureTrait/rollback(_:)``, ``TestFixtureTrait/testServer(data:options:)`` and ``TestFixtureTrait/testServer(_:)``.
public struct TestFixtureTrait: TestTrait, SuiteTrait, TestScoping {
    private let scope: @Sendable (_ test: @Sendable () async throws -> Void) async throws -> Void

    /// On a suite, every test in it gets its own scope.
    public var isRecursive: Bool { true }

    /// Runs `function` inside the fixture's scope.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await scope(function)
    }

    fileprivate init(_ scope: @escaping @Sendable (_ test: @Sendable () async throws -> Void) async throws -> Void) {
        self.scope = scope
    }
}

extension Trait where Self == TestFixtureTrait {
    /// A new database per test (see ``TestStorage/open(models:migrations:configuration:)``),
    /// its temporary files removed afterwards.
    public static func testDatabase(
        _ storage: TestStorage = .memory, models: [any SQLModel.Type] = [], migrations: Migrator? = nil,
        configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) -> Self {
        let models = UncheckedSendable(models)
        return TestFixtureTrait { test in
            let database = try storage.open(models: models.value, migrations: migrations, configuration: configuration)
            try await TestScope.$database.withValue(database) { try await test() }
        }
    }

    /// The shared database, each test inside a transaction rolled back at its end (see
    /// ``SharedTestDatabase``).
    public static func rollback(_ shared: SharedTestDatabase) -> Self {
        TestFixtureTrait { test in
            try await shared.withRollback { database in
                try await TestScope.$database.withValue(database) { try await test() }
            }
        }
    }
}

extension Trait where Self == TestFixtureTrait {
    /// A new in-process server over `data` per test, shut down afterwards.
    public static func testServer(data: JSONValue = SyncServer.sampleData, options: ServerOptions = ServerOptions()) -> Self {
        TestFixtureTrait { test in
            try await withTestServer(data: data, options: options) { server in
                try await TestScope.$server.withValue(server) { try await test() }
            }
        }
    }

    /// The shared server, reset before each test (see ``SharedTestServer``).
    public static func testServer(_ shared: SharedTestServer) -> Self {
        TestFixtureTrait { test in
            try await shared.withServer { server in
                try await TestScope.$server.withValue(server) { try await test() }
            }
        }
    }
}
