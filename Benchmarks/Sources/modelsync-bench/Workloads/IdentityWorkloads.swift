import Foundation
import ModelSync

/// What decoding through an identity map costs: an array of GitHub users of which half are
/// already in the map (those are merged into their canonical values, the others inserted),
/// against plain decoding of the same bytes without a map.
enum IdentityWorkloads {
    static let all = [decode]

    static let decode = Workload(
        name: "identity_decode",
        summary: "decode GitHub users through an identity map holding half of them (merge); peer: plain (no map)",
        unit: .mebibytesPerSecond,
        sizes: [WorkloadSize(3_000, quick: true), WorkloadSize(30_000)]
    ) { size in
        let data = GitHubUsers(count: size.count)
        let bytes = data.json
        let firstHalf = GitHubUsers(count: size.count / 2).json
        let filled = MapHolder()

        // A fresh map holding the first half, before every timed run (untimed).
        let reset: () async throws -> Void = {
            let map = IdentityMap(capacity: size.count)
            _ = try JSONModelDecoder(options: JSONDecodingOptions(identityMap: map)).decode([User].self, from: firstHalf)
            filled.map = map
        }
        let ours = Contender.ours(reset: reset) {
            let map = filled.map
            let users = try JSONModelDecoder(options: JSONDecodingOptions(identityMap: map)).decode([User].self, from: bytes)
            return checksum(users) &+ map.count
        }
        let plain = Contender(name: "plain") {
            checksum(try JSONModelDecoder().decode([User].self, from: bytes)) &+ size.count
        }
        return PreparedWorkload(bytes: bytes.count, ours: ours, peers: [plain]) {
            try await reset()
            let map = filled.map
            let merged = try JSONModelDecoder(options: JSONDecodingOptions(identityMap: map)).decode([User].self, from: bytes)
            try expectEqual(merged, try JSONModelDecoder().decode([User].self, from: bytes), "decoding through the map")
            guard map.count == size.count else { throw BenchmarkError("the map holds \(map.count) users, expected \(size.count)") }
        }
    }

    private static func checksum(_ users: [User]) -> Int {
        users.reduce(users.count) { $0 &+ $1.id &+ $1.followers &+ $1.plan.privateRepos }
    }
}

/// The map the next timed run decodes into (set by the untimed reset).
private final class MapHolder {
    var map = IdentityMap()
}
