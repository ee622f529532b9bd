import Foundation
import ModelSync

/// Decoding a large JSON array from a file element by element, without keeping the elements:
/// the peak memory column is the figure to read (against the document's size, the MiB column).
/// Every contender reads the same file and sums the same fields of every user.
enum StreamingWorkloads {
    static let all = [stream]

    static let stream = Workload(
        name: "json_stream",
        summary: "sum over a file's array of GitHub users, element by element; peers: foundation (Data(contentsOf:) + JSONDecoder), whole (Data(contentsOf:) + decode [User])",
        unit: .mebibytesPerSecond,
        sizes: [WorkloadSize(1_000, quick: true), WorkloadSize(100_000)]
    ) { size in
        let data = GitHubUsers(count: size.count)
        let file = try TemporaryFile(data.json)
        let url = file.url
        let ours = Contender.ours {
            var sum = 0
            try JSONModelDecoder().forEachElement(User.self, contentsOf: url) { sum = sum &+ checksum($0) }
            return withExtendedLifetime(file) { sum }
        }
        let foundation = Contender(name: "foundation") {
            let users = try GitHubUsers.foundationDecoder().decode([CodableUser].self, from: Data(contentsOf: url))
            return users.reduce(0) { $0 &+ $1.id &+ $1.followers &+ $1.plan.privateRepos }
        }
        let whole = Contender(name: "whole") {
            try JSONModelDecoder().decode([User].self, from: Data(contentsOf: url)).reduce(0) { $0 &+ checksum($1) }
        }
        return PreparedWorkload(bytes: data.json.count, ours: ours, peers: [foundation, whole]) {
            var streamed: [User] = []
            try JSONModelDecoder().forEachElement(User.self, contentsOf: url) { streamed.append($0) }
            try expectEqual(streamed.map(CodableUser.init), data.users, "ModelSync's streaming decode")
            var fromSequence: [User] = []
            for try await user in JSONModelDecoder().elements(User.self, contentsOf: url) { fromSequence.append(user) }
            try expectEqual(fromSequence, streamed, "ModelSync's element sequence")
        }
    }

    private static func checksum(_ user: User) -> Int {
        user.id &+ user.followers &+ user.plan.privateRepos
    }
}

/// A file in the temporary directory, removed when the last reference goes.
private final class TemporaryFile: Sendable {
    let url: URL

    init(_ bytes: [UInt8]) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-\(UUID().uuidString).json")
        try Data(bytes).write(to: url)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
