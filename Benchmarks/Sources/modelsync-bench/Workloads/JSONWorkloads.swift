import Foundation
import ModelSync

/// JSON decoding and encoding of an array of GitHub users (see `Data/GitHubUsers.swift`):
/// ModelSync's generated codec (lenient mode, ISO 8601 dates) against Foundation's
/// `JSONDecoder` / `JSONEncoder` with explicit `CodingKeys` and `.iso8601` dates, on the same
/// bytes. Throughput counts the bytes of the generated document.
enum JSONWorkloads {
    static let sizes = [WorkloadSize(1_000, quick: true), WorkloadSize(10_000), WorkloadSize(100_000)]

    /// `[UInt8]` → `[User]`; the peer decodes the same bytes as `Data`.
    static let decode = Workload(
        name: "json_decode",
        summary: "decode an array of GitHub users; peer: foundation (JSONDecoder, CodingKeys, .iso8601)",
        unit: .mebibytesPerSecond,
        sizes: sizes
    ) { size in
        let data = GitHubUsers(count: size.count)
        let bytes = data.json
        let foundationBytes = Data(bytes)
        let decoder = GitHubUsers.foundationDecoder()
        let foundation = Contender(name: "foundation") {
            checksum(try decoder.decode([CodableUser].self, from: foundationBytes))
        }
        let ours = Contender.ours {
            checksum(try JSONModelDecoder().decode([User].self, from: bytes))
        }
        // Not a rival: the parser alone (a tape of the whole document, nothing decoded), the
        // limit decoding approaches. Its ratio is the share of ours' time that parsing takes.
        let parseOnly = Contender(name: "parse_only") {
            _ = try JSONDocument(bytes: bytes)
            return bytes.count
        }
        // Ours as it decoded before issue #20: a tape of the whole document, then decoding
        // (a parsed document as the source takes that path), to show what reading a root array
        // element by element changed.
        let wholeTape = Contender(name: "whole_tape") {
            checksum(try JSONModelDecoder().decode([User].self, from: JSONDocument(bytes: bytes)))
        }
        // Not rivals either: releasing each side's result (decoded untimed before the run), a cost
        // both sides pay alike inside their timed runs, which pulls the ratio towards 1.
        let results = DecodedResults()
        let releaseOnly = Contender(
            name: "release_only", reset: { results.ours = try JSONModelDecoder().decode([User].self, from: bytes) }
        ) {
            defer { results.ours = [] }
            return results.ours.count
        }
        let foundationReleaseOnly = Contender(
            name: "foundation_release_only", reset: { results.foundation = try decoder.decode([CodableUser].self, from: foundationBytes) }
        ) {
            defer { results.foundation = [] }
            return results.foundation.count
        }
        let peers = [foundation, parseOnly, wholeTape, releaseOnly, foundationReleaseOnly]
        return PreparedWorkload(bytes: bytes.count, ours: ours, peers: peers) {
            try verifyDecoding(data)
        }
    }

    /// The results that the `release_only` contenders release, decoded by their untimed reset.
    private final class DecodedResults: @unchecked Sendable {
        var ours: [User] = []
        var foundation: [CodableUser] = []
    }

    /// `[User]` → `[UInt8]`; the peer encodes the same users as `[CodableUser]`.
    static let encode = Workload(
        name: "json_encode",
        summary: "encode an array of GitHub users; peer: foundation (JSONEncoder, CodingKeys, .iso8601)",
        unit: .mebibytesPerSecond,
        sizes: sizes
    ) { size in
        let data = GitHubUsers(count: size.count)
        let users = data.users
        let encoder = GitHubUsers.foundationEncoder()
        let foundation = Contender(name: "foundation") {
            try encoder.encode(users).count
        }
        let ourUsers = try JSONModelDecoder().decode([User].self, from: data.json)
        let ours = Contender.ours {
            try JSONModelEncoder().encode(ourUsers).count
        }
        return PreparedWorkload(bytes: data.json.count, ours: ours, peers: [foundation]) {
            try verifyEncoding(data, ourUsers: ourUsers)
        }
    }

    private static func checksum(_ users: [CodableUser]) -> Int {
        users.reduce(users.count) { $0 &+ $1.id &+ $1.followers &+ $1.plan.privateRepos }
    }

    private static func checksum(_ users: [User]) -> Int {
        users.reduce(users.count) { $0 &+ $1.id &+ $1.followers &+ $1.plan.privateRepos }
    }

    /// Both decoders must give back exactly the generated users.
    private static func verifyDecoding(_ data: GitHubUsers) throws {
        let foundation = try GitHubUsers.foundationDecoder().decode([CodableUser].self, from: Data(data.json))
        try expectEqual(foundation, data.users, "Foundation's decoding")
        let (ours, report) = try JSONModelDecoder().decodeWithReport([User].self, from: data.json)
        try expectEqual(ours.map(CodableUser.init), data.users, "ModelSync's decoding")
        guard report.isEmpty else {
            let first = report.entries.prefix(5).map(\.description).joined(separator: "\n  ")
            throw BenchmarkError(
                "ModelSync's decoding took \(report.entries.count) lenient steps on well-formed input:\n  \(first)"
            )
        }
    }

    /// Both encoders get the generated users, and their outputs decode back to them with either
    /// decoder.
    private static func verifyEncoding(_ data: GitHubUsers, ourUsers: [User]) throws {
        try expectEqual(ourUsers.map(CodableUser.init), data.users, "ModelSync's input (decoded by ModelSync)")
        let decoder = GitHubUsers.foundationDecoder()
        let foundation = try GitHubUsers.foundationEncoder().encode(data.users)
        try expectEqual(try decoder.decode([CodableUser].self, from: foundation), data.users, "Foundation's encoding")
        let ours = try JSONModelEncoder().encode(ourUsers)
        try expectEqual(
            try decoder.decode([CodableUser].self, from: Data(ours)), data.users,
            "ModelSync's encoding, decoded by Foundation"
        )
        try expectEqual(
            try JSONModelDecoder().decode([User].self, from: ours).map(CodableUser.init), data.users,
            "ModelSync's encoding, decoded by ModelSync"
        )
    }
}
