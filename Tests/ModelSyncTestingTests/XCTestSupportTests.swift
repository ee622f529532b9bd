import ModelSync
import ModelSyncTesting
import XCTest

/// The toolkit from XCTest: plain functions and values, no Swift Testing trait needed.
final class XCTestSupportTests: XCTestCase {
    static let shared = SharedTestDatabase(.file, models: [User.self]) { db in _ = try users.create(in: db) }

    func testAFreshDatabasePerTest() throws {
        try withTestDatabase(.file, models: [User.self]) { db in
            _ = try users.create(2, in: db)
            XCTAssertEqual(try db.read { try User.count($0) }, 2)
        }
    }

    func testASharedDatabaseRolledBack() async throws {
        try await Self.shared.withRollback { db in
            _ = try users.create(3, in: db)
            XCTAssertEqual(try userCount(db), 4)
        }
        XCTAssertEqual(try userCount(Self.shared.database()), 1)
    }
}
