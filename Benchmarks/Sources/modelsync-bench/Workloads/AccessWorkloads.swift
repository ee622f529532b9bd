import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerAuth

/// What access rules cost a request: the same reads as signed-in users against two JSON-file
/// servers on the same data, one with rules (`ours`) and one without (`no_rules`), in one run.
///
/// Posts are private (`{"posts": 600}`). Each of the 16 workers is one user with an HS256 JWT
/// and reads only its own posts, so both servers answer the same rows; with rules, each request
/// also verifies its token and filters by owner. Goal: `ours` ≥ 0.87 of `no_rules` (the rules
/// cost at most 15%).
enum AccessWorkloads {
    static let getByID = workload("server_get_id_access", "GET /posts/<id> of the caller's own posts") { base, worker, index, _ in
        // Worker w is user w+1, owner of posts w+1, w+101, w+201, … (ServerFleet.data()).
        let id = worker + 1 + ServerWorkloads.userCount * (index % (ServerWorkloads.postCount / ServerWorkloads.userCount))
        return (.GET, "\(base)/posts/\(id)", nil, [])
    }
    static let getFiltered = workload("server_get_filtered_access", "GET /posts?userId=<the caller> (10 of 1,000 posts)") { base, worker, _, _ in
        (.GET, "\(base)/posts?userId=\(worker + 1)", nil, [])
    }

    static let all = [getByID, getFiltered]

    private static func workload(_ name: String, _ what: String, _ request: @escaping ServerWorkloads.MakeRequest) -> Workload {
        Workload(
            name: name, summary: "\(what), signed in; ours: JSON file with access rules (600); peer: no_rules, the same server without",
            unit: .requestsPerSecond, sizes: ServerWorkloads.sizes
        ) { size in
            let servers = try await AccessServers.shared.start()
            let tokens = servers.tokens
            // Both send the same token: only the server with rules reads it.
            let signedIn: ServerWorkloads.MakeRequest = { base, worker, index, etags in
                let (method, url, body, headers) = request(base, worker, index, etags)
                return (method, url, body, headers + [("Authorization", "Bearer \(tokens[worker % tokens.count])")])
            }
            func contender(_ name: String, _ base: String) -> Contender {
                Contender(name: name) { try await Load.run(bases: [base], count: size.count, request: signedIn) }
            }
            let ours = contender(Contender.oursName, servers.withRules)
            let peer = contender("no_rules", servers.withoutRules)
            return PreparedWorkload(ours: ours, peers: [peer]) {
                // Each worker's rows are its own under the rules: the same answers from both.
                let (method, url, _, headers) = signedIn(servers.withRules, 3, 1, [:])
                let ruled = try await Load.send(method, url, body: nil, headers: headers)
                let open = try await Load.send(method, url.replacingOccurrences(of: servers.withRules, with: servers.withoutRules), body: nil, headers: headers)
                guard ruled.0 == 200, ruled.2 == open.2 else { throw BenchmarkError("\(name): the servers answer \(url) differently") }
                let foreign = try await Load.send(.GET, "\(servers.withRules)/posts/1", body: nil, headers: [("Authorization", "Bearer \(tokens[1])")])
                guard foreign.0 == 404 else { throw BenchmarkError("\(name): user 2 reads user 1's post (\(foreign.0))") }
            }
        }
    }
}

/// The two server processes, started once (through ``ServerFleet``, which stops them).
private actor AccessServers {
    static let shared = AccessServers()

    struct Addresses: Sendable {
        let withRules: String
        let withoutRules: String
        /// User `n + 1`'s token at index `n`.
        let tokens: [String]
    }

    private var addresses: Addresses?

    func start() async throws -> Addresses {
        if let addresses { return addresses }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-access-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let data = Data(ServerFleet.data().jsonBytes())
        let (ruled, open) = (directory.appendingPathComponent("ruled.json"), directory.appendingPathComponent("open.json"))
        try data.write(to: ruled)
        try data.write(to: open)
        let fleet = try await SignedInFleet.launch([(ruled.path, ["posts": 600]), (open.path, nil)], in: directory)
        let (withRules, withoutRules, tokens) = (fleet.bases[0], fleet.bases[1], fleet.tokens)
        let started = Addresses(withRules: withRules, withoutRules: withoutRules, tokens: tokens)
        addresses = started
        return started
    }
}

/// Server processes of this binary (`--serve`) for signed-in load: each over its source, under
/// its rules (nil: none), all trusting one HS256 secret; and a token for each worker's user.
enum SignedInFleet {
    static func launch(_ servers: [(source: String, rules: JSONValue?)], in directory: URL) async throws -> (bases: [String], tokens: [String]) {
        let secret = Data((0..<48).map { _ in UInt8.random(in: 0...255) })
        let secretFile = directory.appendingPathComponent("jwt.secret")
        try secret.write(to: secretFile)
        let issuer = try await JWTAccessTokens(secret: secret)
        var tokens: [String] = []
        for user in 1...ServerWorkloads.concurrency {
            tokens.append(try await issuer.accessToken(for: String(user), role: nil))
        }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0])
        var bases: [String] = []
        for (index, server) in servers.enumerated() {
            var arguments = ["--serve", server.source]
            if let rules = server.rules {
                let file = directory.appendingPathComponent("rules-\(index).json")
                try Data(rules.jsonBytes()).write(to: file)
                arguments += ["--serve-access", file.path, "--serve-secret", secretFile.path]
            }
            bases.append(try await ServerFleet.shared.launch(executable, arguments))
        }
        return (bases, tokens)
    }
}
