import Foundation
import ModelSync

// The JSON workloads' data: an array of objects shaped like GitHub's `GET /users/{login}`
// payload (33 keys: strings, URLs, ints, bools, nulls, ISO 8601 dates, a nested object).
// The same fields are declared twice with the same Swift types: once the Foundation way
// (`Codable` with explicit snake_case `CodingKeys`) and once the ModelSync way (`@Model`).

/// A GitHub user, the `Codable` way: what the Foundation peer decodes and encodes.
struct CodableUser: Codable, Equatable, Sendable {
    var login: String
    var id: Int
    var nodeId: String
    var avatarUrl: String
    var gravatarId: String
    var url: String
    var htmlUrl: String
    var followersUrl: String
    var followingUrl: String
    var gistsUrl: String
    var starredUrl: String
    var subscriptionsUrl: String
    var organizationsUrl: String
    var reposUrl: String
    var eventsUrl: String
    var receivedEventsUrl: String
    var type: String
    var siteAdmin: Bool
    var name: String?
    var company: String?
    var blog: String
    var location: String?
    var email: String?
    var hireable: Bool?
    var bio: String?
    var twitterUsername: String?
    var publicRepos: Int
    var publicGists: Int
    var followers: Int
    var following: Int
    var createdAt: Date
    var updatedAt: Date
    var plan: CodablePlan

    enum CodingKeys: String, CodingKey {
        case login, id
        case nodeId = "node_id"
        case avatarUrl = "avatar_url"
        case gravatarId = "gravatar_id"
        case url
        case htmlUrl = "html_url"
        case followersUrl = "followers_url"
        case followingUrl = "following_url"
        case gistsUrl = "gists_url"
        case starredUrl = "starred_url"
        case subscriptionsUrl = "subscriptions_url"
        case organizationsUrl = "organizations_url"
        case reposUrl = "repos_url"
        case eventsUrl = "events_url"
        case receivedEventsUrl = "received_events_url"
        case type
        case siteAdmin = "site_admin"
        case name, company, blog, location, email, hireable, bio
        case twitterUsername = "twitter_username"
        case publicRepos = "public_repos"
        case publicGists = "public_gists"
        case followers, following
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case plan
    }

    /// Writes every key, `null` included, as GitHub does (the synthesized `encode(to:)` would
    /// leave nil optionals out).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(login, forKey: .login)
        try container.encode(id, forKey: .id)
        try container.encode(nodeId, forKey: .nodeId)
        try container.encode(avatarUrl, forKey: .avatarUrl)
        try container.encode(gravatarId, forKey: .gravatarId)
        try container.encode(url, forKey: .url)
        try container.encode(htmlUrl, forKey: .htmlUrl)
        try container.encode(followersUrl, forKey: .followersUrl)
        try container.encode(followingUrl, forKey: .followingUrl)
        try container.encode(gistsUrl, forKey: .gistsUrl)
        try container.encode(starredUrl, forKey: .starredUrl)
        try container.encode(subscriptionsUrl, forKey: .subscriptionsUrl)
        try container.encode(organizationsUrl, forKey: .organizationsUrl)
        try container.encode(reposUrl, forKey: .reposUrl)
        try container.encode(eventsUrl, forKey: .eventsUrl)
        try container.encode(receivedEventsUrl, forKey: .receivedEventsUrl)
        try container.encode(type, forKey: .type)
        try container.encode(siteAdmin, forKey: .siteAdmin)
        try container.encodeOrNull(name, forKey: .name)
        try container.encodeOrNull(company, forKey: .company)
        try container.encode(blog, forKey: .blog)
        try container.encodeOrNull(location, forKey: .location)
        try container.encodeOrNull(email, forKey: .email)
        try container.encodeOrNull(hireable, forKey: .hireable)
        try container.encodeOrNull(bio, forKey: .bio)
        try container.encodeOrNull(twitterUsername, forKey: .twitterUsername)
        try container.encode(publicRepos, forKey: .publicRepos)
        try container.encode(publicGists, forKey: .publicGists)
        try container.encode(followers, forKey: .followers)
        try container.encode(following, forKey: .following)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(plan, forKey: .plan)
    }
}

extension KeyedEncodingContainer {
    /// `value`, or `null` when it is nil. Concrete overloads, so that the Foundation peer takes
    /// the encoder's direct paths rather than `Optional`'s generic `encode(to:)`.
    mutating func encodeOrNull(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeOrNull(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}

/// A user's plan, the `Codable` way.
struct CodablePlan: Codable, Equatable, Sendable {
    var name: String
    var space: Int
    var collaborators: Int
    var privateRepos: Int

    enum CodingKeys: String, CodingKey {
        case name, space, collaborators
        case privateRepos = "private_repos"
    }
}

/// A GitHub user, the ModelSync way: the JSON keys come from the key strategy.
@Model(jsonKeys: .snakeCase)
struct User: Equatable, Sendable {
    var login: String
    var id: Int
    var nodeId: String
    var avatarUrl: String
    var gravatarId: String
    var url: String
    var htmlUrl: String
    var followersUrl: String
    var followingUrl: String
    var gistsUrl: String
    var starredUrl: String
    var subscriptionsUrl: String
    var organizationsUrl: String
    var reposUrl: String
    var eventsUrl: String
    var receivedEventsUrl: String
    var type: String
    var siteAdmin: Bool
    var name: String?
    var company: String?
    var blog: String
    var location: String?
    var email: String?
    var hireable: Bool?
    var bio: String?
    var twitterUsername: String?
    var publicRepos: Int
    var publicGists: Int
    var followers: Int
    var following: Int
    var createdAt: Date
    var updatedAt: Date
    var plan: Plan
}

/// A user's plan, the ModelSync way.
@Model(jsonKeys: .snakeCase)
struct Plan: Equatable, Sendable {
    var name: String
    var space: Int
    var collaborators: Int
    var privateRepos: Int
}

extension CodableUser {
    /// The same user as the `Codable` type, to compare what the two decoders produced.
    init(_ user: User) {
        self.init(
            login: user.login, id: user.id, nodeId: user.nodeId, avatarUrl: user.avatarUrl,
            gravatarId: user.gravatarId, url: user.url, htmlUrl: user.htmlUrl,
            followersUrl: user.followersUrl, followingUrl: user.followingUrl, gistsUrl: user.gistsUrl,
            starredUrl: user.starredUrl, subscriptionsUrl: user.subscriptionsUrl,
            organizationsUrl: user.organizationsUrl, reposUrl: user.reposUrl, eventsUrl: user.eventsUrl,
            receivedEventsUrl: user.receivedEventsUrl, type: user.type, siteAdmin: user.siteAdmin,
            name: user.name, company: user.company, blog: user.blog, location: user.location,
            email: user.email, hireable: user.hireable, bio: user.bio, twitterUsername: user.twitterUsername,
            publicRepos: user.publicRepos, publicGists: user.publicGists, followers: user.followers,
            following: user.following, createdAt: user.createdAt, updatedAt: user.updatedAt,
            plan: CodablePlan(
                name: user.plan.name, space: user.plan.space, collaborators: user.plan.collaborators,
                privateRepos: user.plan.privateRepos
            )
        )
    }
}

/// The JSON workloads' data set: `count` users and the JSON document both sides decode.
struct GitHubUsers: Sendable {
    /// The users, as generated.
    let users: [CodableUser]
    /// `users` as GitHub writes them: compact, keys in `CodingKeys` order, `null` for nil, slashes
    /// not escaped, dates in whole seconds (see ``DocumentWriter``).
    let json: [UInt8]

    /// Generates `count` users from `seed`: the same arguments always give the same bytes.
    init(count: Int, seed: UInt64 = 0x6769_7468_7562) {
        var random = SeededGenerator(seed: seed)
        var users: [CodableUser] = []
        users.reserveCapacity(count)
        var id = 1
        for _ in 0 ..< count {
            id += random.int(in: 1 ... 2_000)
            users.append(Self.user(id: id, random: &random))
        }
        self.users = users
        var writer = DocumentWriter()
        writer.write(users)
        self.json = writer.bytes
    }

    /// The encoder of the Foundation encode peer.
    static func foundationEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    /// The Foundation decoder of the Foundation decode peer.
    static func foundationDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    // MARK: - Generation

    private static let firstNames = [
        "Ada", "Alan", "Grace", "Linus", "Margaret", "Dennis", "Barbara", "Ken", "Frances", "Guido",
        "José", "Zoë", "Søren", "Chloé", "Łukasz", "Anaïs", "Björn", "Renée", "Jürgen", "Çağla",
        "伟", "芳", "さくら", "Дмитрий", "Αλέξανδρος", "Nguyễn", "Mohammed", "Priya", "Olúwaseun", "Ana",
    ]
    private static let lastNames = [
        "Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Ritchie", "Liskov", "Thompson",
        "Allen", "van Rossum", "García", "Müller", "O'Brien", "Kowalski", "Dupont", "Johansson",
        "王", "李", "山田", "Иванов", "Παπαδόπουλος", "Văn An", "Al-Sayed", "Sharma", "Adébáyọ̀", "Silva",
    ]
    private static let loginParts = [
        "octo", "cat", "dev", "code", "hack", "byte", "pixel", "rust", "swift", "node", "data", "cloud",
        "null", "lambda", "vector", "quantum", "neo", "retro", "ninja", "wizard", "panda", "fox",
    ]
    private static let companies = [
        "@github", "@apple", "@swiftlang", "Acme Corp", "Initech", "Globex", "Umbrella, Inc.",
        "Société Générale", "Zürich Insurance", "株式会社サンプル", "Freelance", "@vapor @hummingbird-project",
    ]
    private static let locations = [
        "San Francisco, CA", "Berlin, Germany", "London", "São Paulo, Brasil", "東京", "Zürich",
        "Bengaluru, India", "Lagos, Nigeria", "Montréal, QC", "Kraków", "Remote", "Earth 🌍",
    ]
    private static let bios = [
        "Software engineer.",
        "Building things at \"Acme\".\nOpen source maintainer.",
        "I ❤️ Swift, Rust & coffee ☕️",
        "Développeur passionné — café, vélo et code.",
        "ソフトウェアエンジニア。オープンソースが好きです。",
        "Path: C:\\Users\\dev\\projects — tabs\tand \"quotes\"",
        "Maintainer of a few small libraries. Views are my own.",
        "PhD student working on compilers 🚀\nPreviously @google.",
        "Ex-physicist. Now: distributed systems, databases, and the occasional <script> tag.",
        "",
    ]
    private static let plans = ["free", "pro", "team", "enterprise"]

    private static func user(id: Int, random: inout SeededGenerator) -> CodableUser {
        var login = random.pick(loginParts)
        if random.chance(0.6) { login += "-" + random.pick(loginParts) }
        if random.chance(0.5) { login += String(random.int(in: 1 ... 9_999)) }
        let api = "https://api.github.com/users/\(login)"
        let isOrganization = random.chance(0.05)
        let name = random.chance(0.92) ? "\(random.pick(firstNames)) \(random.pick(lastNames))" : nil
        let company = random.chance(0.5) ? random.pick(companies) : nil
        let blog = random.chance(0.6) ? "https://\(login).dev" : ""
        let location = random.chance(0.7) ? random.pick(locations) : nil
        let email = random.chance(0.3) ? "\(login)@example.com" : nil
        let hireable = random.chance(0.5) ? random.chance(0.7) : nil
        let bio = random.chance(0.6) ? random.pick(bios) : nil
        let twitter = random.chance(0.4) ? login.replacingOccurrences(of: "-", with: "_") : nil
        // Skewed like real follower counts: most users have a few, some have many.
        let skew = random.unit()
        let followers = Int(skew * skew * skew * skew * 50_000)
        // Whole seconds between 2008 and 2020, updated some time before late 2025.
        let created = random.int(in: 1_199_145_600 ... 1_577_836_800)
        let updated = random.int(in: created ... 1_763_683_200)
        let planName = random.pick(plans)
        return CodableUser(
            login: login,
            id: id,
            nodeId: Data("04:\(isOrganization ? "Organization" : "User")\(id)".utf8).base64EncodedString(),
            avatarUrl: "https://avatars.githubusercontent.com/u/\(id)?v=4",
            gravatarId: "",
            url: api,
            htmlUrl: "https://github.com/\(login)",
            followersUrl: "\(api)/followers",
            followingUrl: "\(api)/following{/other_user}",
            gistsUrl: "\(api)/gists{/gist_id}",
            starredUrl: "\(api)/starred{/owner}{/repo}",
            subscriptionsUrl: "\(api)/subscriptions",
            organizationsUrl: "\(api)/orgs",
            reposUrl: "\(api)/repos",
            eventsUrl: "\(api)/events{/privacy}",
            receivedEventsUrl: "\(api)/received_events",
            type: isOrganization ? "Organization" : "User",
            siteAdmin: random.chance(0.02),
            name: name,
            company: company,
            blog: blog,
            location: location,
            email: email,
            hireable: hireable,
            bio: bio,
            twitterUsername: twitter,
            publicRepos: random.int(in: 0 ... 300),
            publicGists: random.int(in: 0 ... 100),
            followers: followers,
            following: random.int(in: 0 ... 500),
            createdAt: Date(timeIntervalSince1970: TimeInterval(created)),
            updatedAt: Date(timeIntervalSince1970: TimeInterval(updated)),
            plan: CodablePlan(
                name: planName,
                space: 976_562_499,
                collaborators: planName == "free" ? 0 : random.int(in: 0 ... 50),
                privateRepos: planName == "free" ? 10_000 : random.int(in: 0 ... 100_000)
            )
        )
    }
}

/// Writes the data set's JSON document, with keys in one fixed order as real servers do.
///
/// Why not Foundation's `JSONEncoder`: on Linux it writes each object's keys in hash order,
/// which differs from object to object and from run to run, so its bytes are not reproducible
/// and unlike any real payload. Each JSON workload's verification checks that Foundation's
/// decoder reads this document back to exactly the generated users.
struct DocumentWriter {
    private(set) var bytes: [UInt8] = []
    private let dates = Date.ISO8601FormatStyle()   // "2011-01-25T18:44:36Z"

    mutating func write(_ users: [CodableUser]) {
        bytes.append(UInt8(ascii: "["))
        for (index, user) in users.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(user)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func write(_ user: CodableUser) {
        typealias Key = CodableUser.CodingKeys
        bytes.append(UInt8(ascii: "{"))
        member(Key.login, string: user.login, first: true)
        member(Key.id, number: user.id)
        member(Key.nodeId, string: user.nodeId)
        member(Key.avatarUrl, string: user.avatarUrl)
        member(Key.gravatarId, string: user.gravatarId)
        member(Key.url, string: user.url)
        member(Key.htmlUrl, string: user.htmlUrl)
        member(Key.followersUrl, string: user.followersUrl)
        member(Key.followingUrl, string: user.followingUrl)
        member(Key.gistsUrl, string: user.gistsUrl)
        member(Key.starredUrl, string: user.starredUrl)
        member(Key.subscriptionsUrl, string: user.subscriptionsUrl)
        member(Key.organizationsUrl, string: user.organizationsUrl)
        member(Key.reposUrl, string: user.reposUrl)
        member(Key.eventsUrl, string: user.eventsUrl)
        member(Key.receivedEventsUrl, string: user.receivedEventsUrl)
        member(Key.type, string: user.type)
        member(Key.siteAdmin, bool: user.siteAdmin)
        member(Key.name, string: user.name)
        member(Key.company, string: user.company)
        member(Key.blog, string: user.blog)
        member(Key.location, string: user.location)
        member(Key.email, string: user.email)
        member(Key.hireable, bool: user.hireable)
        member(Key.bio, string: user.bio)
        member(Key.twitterUsername, string: user.twitterUsername)
        member(Key.publicRepos, number: user.publicRepos)
        member(Key.publicGists, number: user.publicGists)
        member(Key.followers, number: user.followers)
        member(Key.following, number: user.following)
        member(Key.createdAt, string: user.createdAt.formatted(dates))
        member(Key.updatedAt, string: user.updatedAt.formatted(dates))
        key(Key.plan)
        typealias PlanKey = CodablePlan.CodingKeys
        bytes.append(UInt8(ascii: "{"))
        member(PlanKey.name, string: user.plan.name, first: true)
        member(PlanKey.space, number: user.plan.space)
        member(PlanKey.collaborators, number: user.plan.collaborators)
        member(PlanKey.privateRepos, number: user.plan.privateRepos)
        bytes.append(UInt8(ascii: "}"))
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func key(_ key: some CodingKey, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        string(key.stringValue)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func member(_ name: some CodingKey, string value: String?, first: Bool = false) {
        key(name, first: first)
        if let value { string(value) } else { bytes += "null".utf8 }
    }

    private mutating func member(_ name: some CodingKey, number value: Int) {
        key(name)
        bytes += String(value).utf8
    }

    private mutating func member(_ name: some CodingKey, bool value: Bool?) {
        key(name)
        bytes += (value.map { $0 ? "true" : "false" } ?? "null").utf8
    }

    /// A string literal: quotes, backslashes and control characters escaped, nothing else.
    private mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += #"\""#.utf8
            case UInt8(ascii: "\\"): bytes += #"\\"#.utf8
            case UInt8(ascii: "\n"): bytes += #"\n"#.utf8
            case UInt8(ascii: "\r"): bytes += #"\r"#.utf8
            case UInt8(ascii: "\t"): bytes += #"\t"#.utf8
            case 0 ..< 0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += #"\u00"#.utf8
                bytes += [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
