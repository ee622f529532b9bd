import Foundation
import ModelSyncStorage
import ModelSyncTesting
import Testing

@Model
struct Profile: Equatable {
    var id: Int
    var name: String
    var joined: Date
    var tags: [String] = []
}

/// A nil primary key until somebody assigns one.
@Model
struct Ticket: Equatable {
    var id: Int?
    var title: String
}

/// A composite primary key.
@Model
struct Membership: Equatable {
    @PrimaryKey var groupId: Int
    @PrimaryKey var userId: Int
    var role: String
}

/// A composite key of strings that may contain the separator.
@Model
struct Pair: Equatable {
    @PrimaryKey var left: String
    @PrimaryKey var right: String
    var note: String
}

/// No primary key at all.
@Model
struct Memo: Equatable {
    var text: String
}

/// A root directory for a test's suites (the toolkit's temporary directory), removed when the
/// test is over.
final class StorageRoot: Sendable {
    private let directory: TemporaryDirectory
    var root: URL { directory.url }

    init() throws { directory = try TemporaryDirectory(prefix: "modelsync-storage") }

    func suite(_ name: String = "tests") throws -> StorageSuite {
        try StorageSuite(name: name, in: root)
    }

    /// The names in a suite's directory, sorted.
    func files(of suite: StorageSuite) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: suite.directory.path).sorted()
    }

    /// The file of a key whose name needs no encoding.
    func file(_ key: String, of suite: StorageSuite) -> URL {
        suite.directory.appendingPathComponent("\(key).json")
    }
}
