import ArgumentParser
import Foundation
import Logging
import Metrics
import ModelSyncJSON
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncServerPostgres
import ModelSyncServerSQLite
import Prometheus

/// `modelsync-server db.json --port 3000`: a json-server-compatible REST server over a JSON file,
/// a SQLite file (`data.sqlite`) or PostgreSQL (`--database`); `import` and `export` move data
/// between them, `backup` copies a SQLite file while it is served.
@main
struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelsync-server",
        abstract: "A json-server-compatible REST server over a JSON file, a SQLite file or a PostgreSQL database.",
        subcommands: [Serve.self, Import.self, Export.self, Backup.self, Admin.self],
        defaultSubcommand: Serve.self
    )
}

/// Where the data is: a file or `--database`.
struct DatabaseOption: ParsableArguments {
    @Option(help: "A SQLite file (sqlite:<path>, created when missing) or a PostgreSQL database: postgres://user[:password]@host[:port]/database[?schema=name&sslmode=disable|prefer|require&role=name&min_connections=0-16&application_name=name]; role: the role requests take under --access; min_connections: connections kept open while idle (16); application_name: how the connections show in pg_stat_activity.")
    var database: String?

    /// A database the data lives in.
    enum Store {
        case postgres(ServerDatabase)
        case sqlite(path: String)

        var description: String {
            switch self {
            case .postgres(let database): database.description
            case .sqlite(let path): path
            }
        }
    }

    func parsed() throws -> Store? {
        guard let database else { return nil }
        if database.hasPrefix("sqlite:") {
            let path = String(database.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ValidationError("--database sqlite:<path> needs a path") }
            return .sqlite(path: path)
        }
        do {
            return .postgres(try ServerDatabase(url: database))
        } catch {
            throw ValidationError("--database: \(error)")
        }
    }

    /// The database given, or the file when its name says SQLite (`.sqlite`, `.sqlite3`, `.db`).
    func store(file: String?) throws -> Store? {
        if let store = try parsed() { return store }
        return file.flatMap { SyncServer.isSQLitePath($0) ? .sqlite(path: $0) : nil }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a JSON file, a SQLite file or a PostgreSQL database (the default command).",
        discussion: """
            Every top-level array in the data is a collection (GET/POST /posts, GET/PUT/PATCH/DELETE \
            /posts/1, /posts/1/comments), every top-level object a singular resource. Over a JSON file, \
            writes are saved back to it atomically (for mocks and tests). A file named *.sqlite, \
            *.sqlite3 or *.db is a SQLite database (created when missing; fill it with `import`): \
            one server per file, every write committed before it is answered. Over PostgreSQL (after \
            `modelsync-server import`), several servers can serve one database, and each one's change \
            stream sees every write.
            """
    )

    @Argument(help: "The JSON file or SQLite file (.sqlite, .sqlite3, .db) to serve (or --database).")
    var file: String?

    @OptionGroup var database: DatabaseOption

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 3000

    @Flag(help: "Answer every write with 405 and never change the data.")
    var readOnly = false

    @Option(help: "Wait this many milliseconds before every answer.")
    var delay = 0

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodySize = 1 << 20

    @Option(help: "Close a connection that sends and receives nothing for this many seconds (0: never).")
    var idleTimeout = 30

    @Option(help: "The most connections open at once (0: no limit).")
    var maxConnections = 512

    @Option(help: "Answer a share of requests (0–1) with --fail-status, for testing clients.")
    var failRate = 0.0

    @Option(help: "The status answered by --fail-rate.")
    var failStatus = 503

    @Option(help: "Drop the connection on a share of requests (0–1), for testing clients.")
    var dropRate = 0.0

    @Option(help: "Apply a share of requests (0–1), then drop the connection unanswered, for testing clients.")
    var loseAnswerRate = 0.0

    @Option(help: "Access rules per collection, a JSON file ({\"posts\": 644, \"messages\": 600}): requests then need tokens.")
    var access: String?

    @Option(help: "An HS256 secret (at least 32 bytes) that signs and verifies tokens; without it, --access signs with a random one.")
    var jwtSecretFile: String?

    @Option(help: "A JWKS file of an identity provider's public keys (RS256, ES256) that verify tokens; needs --jwt-issuer and --jwt-audience.")
    var jwks: String?

    @Option(help: "The iss that tokens must have (required with --jwks).")
    var jwtIssuer: String?

    @Option(help: "The aud that tokens must include (required with --jwks: the provider's keys sign other apps' tokens too).")
    var jwtAudience: String?

    @Option(help: "The claim that holds a user's role (admin bypasses the rules).")
    var roleClaim = JWTAccessTokens.defaultRoleClaim

    @Option(help: "How long the built-in accounts' access tokens are valid, in seconds.")
    var accessTokenLifetime = 60 * 60

    @Option(help: "How long the built-in accounts' refresh tokens (POST /token) stay valid unused, in seconds (0: no refresh tokens).")
    var refreshTokenLifetime = 30 * 24 * 60 * 60

    @Option(help: "An email whose existing built-in account the server makes an admin when it starts (repeatable); never an account registered later. Create the first admin with `modelsync-server admin <email>`.")
    var admin: [String] = []

    @Option(help: "Logins, registrations and refreshes per client address per --rate-limit-window (0: no limits).")
    var rateLimitPerAddress = AccountRateLimits().perAddress

    @Option(help: "Logins and registrations per account (email) per --rate-limit-window (0: no limits).")
    var rateLimitPerAccount = AccountRateLimits().perAccount

    @Option(help: "The seconds over which the rate limits refill.")
    var rateLimitWindow = 60

    @Option(help: "Password hashes (bcrypt) run at once; more wait their turn.")
    var concurrentPasswordHashes = AccountRateLimits().concurrentPasswordHashes

    @Flag(help: "Serve request metrics in Prometheus's text format at /_metrics.")
    var metrics = false

    @Option(help: "Log at this level and above: trace, debug, info (every request), notice, warning, error, critical.")
    var logLevel = "warning"

    @Option(help: "Keep deletions in the change feed for this many seconds; older cursors must resync (410).")
    var tombstoneRetention = 7 * 24 * 60 * 60

    @Option(help: "Keep at most this many deletions in the change feed.")
    var tombstoneCapacity = 100_000

    func validate() throws {
        guard (file == nil) != (database.database == nil) else {
            throw ValidationError("give either a JSON file or --database, not both")
        }
        guard (0...1).contains(failRate), (0...1).contains(dropRate), (0...1).contains(loseAnswerRate) else {
            throw ValidationError("--fail-rate, --drop-rate and --lose-answer-rate must be between 0 and 1")
        }
        guard (0...Int(RefreshTokenPolicy.maximumLifetime.components.seconds)).contains(refreshTokenLifetime), accessTokenLifetime >= 1 else {
            throw ValidationError("--refresh-token-lifetime must be from 0 to \(RefreshTokenPolicy.maximumLifetime.components.seconds) seconds, --access-token-lifetime at least 1")
        }
        guard admin.allSatisfy({ StoredAccount.normalizedEmail($0) != nil }) else {
            throw ValidationError("--admin takes an email address")
        }
        guard idleTimeout >= 0, maxConnections >= 0 else {
            throw ValidationError("--idle-timeout and --max-connections must not be negative")
        }
        guard tombstoneRetention >= 0, tombstoneCapacity >= 0 else {
            throw ValidationError("--tombstone-retention and --tombstone-capacity must not be negative")
        }
        guard access != nil || (jwtSecretFile == nil && jwks == nil) else {
            throw ValidationError("--jwt-secret-file and --jwks need --access")
        }
        guard jwks == nil || (jwtAudience?.isEmpty == false && jwtIssuer?.isEmpty == false) else {
            throw ValidationError("--jwks needs --jwt-audience and --jwt-issuer: an identity provider's keys sign tokens for other apps and tenants too")
        }
        guard rateLimitPerAddress >= 0, rateLimitPerAccount >= 0, rateLimitWindow >= 1, concurrentPasswordHashes >= 1 else {
            throw ValidationError("--rate-limit-per-address and --rate-limit-per-account must not be negative, --rate-limit-window and --concurrent-password-hashes at least 1")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard delay >= 0, maxBodySize > 0, (0...65535).contains(port), (100...599).contains(failStatus) else {
            throw ValidationError("--delay, --max-body-size, --port and --fail-status must be in range")
        }
    }

    func run() async throws {
        var logger = SyncServer.defaultLogger
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        var options = ServerOptions(
            readOnly: readOnly, maxBodySize: maxBodySize,
            idleTimeout: idleTimeout > 0 ? .seconds(idleTimeout) : nil,
            maxConnections: maxConnections > 0 ? maxConnections : nil,
            feedLimits: FeedLimits(tombstoneRetention: TimeInterval(tombstoneRetention), tombstoneCapacity: tombstoneCapacity),
            requestLogLevel: .info
        )
        if metrics {
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            options.prometheus = registry
        }
        // The test hooks, only when asked for: a production server carries none.
        if delay > 0 || failRate > 0 || dropRate > 0 || loseAnswerRate > 0 {
            let faults = FaultInjectionMiddleware(delay: .milliseconds(delay))
            if failRate > 0 { faults.inject(Fault(.status(failStatus), fraction: failRate)) }
            if dropRate > 0 { faults.inject(Fault(.dropConnection, fraction: dropRate)) }
            if loseAnswerRate > 0 { faults.inject(Fault(.loseAnswer, fraction: loseAnswerRate)) }
            options.middleware.append(faults)
        }
        options.access = try await accessControl()
        if options.access == nil && !Self.isLoopback(host) {
            FileHandle.standardError.write(Data(
                "modelsync-server: warning: \(host) is not a loopback address and there is no --access: anyone who reaches it reads and writes every row\n".utf8))
        }
        let server: SyncServer
        let source: String
        switch try database.store(file: file) {
        case .postgres(let database)?:
            server = try await SyncServer.start(database: database, host: host, port: port, options: options, logger: logger, stopsOnSignals: true)
            source = database.description
        case .sqlite(let path)?:
            server = try await SyncServer.start(sqlite: path, host: host, port: port, options: options, logger: logger, stopsOnSignals: true)
            source = path
        case nil:
            let file = file ?? ""
            server = try await SyncServer.start(
                file: URL(fileURLWithPath: file), host: host, port: port, options: options, logger: logger, stopsOnSignals: true)
            source = file
        }
        let resources = (try await server.data).objectValue?.keys ?? []
        print("modelsync-server: serving \(source) at \(server.baseURL)\(readOnly ? " (read-only)" : "")")
        for name in resources { print("  \(server.baseURL)/\(name)") }
        print("Press Ctrl-C to stop.")
        // A supervising process reads the address from a pipe, where stdout is block-buffered.
        fflush(nil)
        await server.waitUntilStopped()
    }
}

extension Serve {
    /// The rules and tokens of `--access`: the secret signs the built-in accounts' tokens (a
    /// random one, valid until the process ends, when none is given), the JWKS verifies an
    /// identity provider's.
    func accessControl() async throws -> AccessControl? {
        guard let access else { return nil }
        let rules: AccessRules
        do {
            rules = try AccessRules(json: try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: access)))))
        } catch {
            throw ValidationError("--access \(access): \(error)")
        }
        var secret = try jwtSecretFile.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        // A file written by echo ends in a newline that the other issuers do not sign with.
        while let last = secret?.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { secret?.removeLast() }
        if secret == nil && jwks == nil {
            var random = SystemRandomNumberGenerator()
            secret = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
            FileHandle.standardError.write(Data("modelsync-server: signing tokens with a random secret: they end with this process (--jwt-secret-file keeps them)\n".utf8))
        }
        let tokens: JWTAccessTokens
        do {
            tokens = try await JWTAccessTokens(
                secret: secret, jwks: try jwks.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }, issuer: jwtIssuer, audience: jwtAudience,
                roleClaim: roleClaim, lifetime: .seconds(accessTokenLifetime))
        } catch {
            throw ValidationError("tokens: \(error)")
        }
        // The built-in accounts sign their tokens, so they need the secret.
        let refreshTokens = refreshTokenLifetime == 0 ? nil : RefreshTokenPolicy(digest: SHA256TokenDigest(), lifetime: .seconds(refreshTokenLifetime))
        let limits = rateLimitPerAddress == 0 || rateLimitPerAccount == 0
            ? nil
            : AccountRateLimits(
                perAddress: rateLimitPerAddress, perAccount: rateLimitPerAccount, window: .seconds(rateLimitWindow),
                concurrentPasswordHashes: concurrentPasswordHashes)
        let accounts = secret == nil
            ? nil
            : BuiltInAccounts(issuer: tokens, passwords: try BcryptPasswordHasher(), refreshTokens: refreshTokens, admins: admin, rateLimits: limits)
        return AccessControl(rules: rules, tokens: tokens, accounts: accounts)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a JSON file into a SQLite file or a PostgreSQL database, in one transaction.",
        discussion: "Records keep their versions from the file's bookkeeping, so clients' change-feed cursors stay valid."
    )

    @Argument(help: "The JSON file to load.")
    var file: String

    @OptionGroup var database: DatabaseOption

    @Flag(help: "Replace the data the database already holds (without it, importing into a database with data fails).")
    var replace = false

    func run() async throws {
        guard let store = try database.parsed() else { throw ValidationError("import needs --database") }
        switch store {
        case .postgres(let database):
            try await SyncServer.importData(fromFile: URL(fileURLWithPath: file), into: database, replacing: replace)
        case .sqlite(let path):
            try await SyncServer.importData(fromFile: URL(fileURLWithPath: file), intoSQLite: path, replacing: replace)
        }
        // The store as it describes itself: a PostgreSQL URL's password stays out of the output.
        print("modelsync-server: imported \(file) into \(store.description)")
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a SQLite file's or a PostgreSQL database's data as a JSON file that modelsync-server serves or imports."
    )

    @Argument(help: "The JSON file to write (replaced atomically).")
    var file: String

    @OptionGroup var database: DatabaseOption

    func run() async throws {
        guard let store = try database.parsed() else { throw ValidationError("export needs --database") }
        switch store {
        case .postgres(let database):
            try await SyncServer.exportData(from: database, toFile: URL(fileURLWithPath: file))
        case .sqlite(let path):
            try await SyncServer.exportData(fromSQLite: path, toFile: URL(fileURLWithPath: file))
        }
        // The store as it describes itself: a PostgreSQL URL's password stays out of the output.
        print("modelsync-server: exported \(store.description) to \(file)")
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a SQLite file as one consistent snapshot while a server serves it (VACUUM INTO).",
        discussion: "The copy is a SQLite file that modelsync-server serves as it is; `export` writes a JSON file instead."
    )

    @Argument(help: "The file to write (it must not exist).")
    var destination: String

    @Argument(help: "The SQLite file to copy (or --database sqlite:<path>).")
    var file: String?

    @OptionGroup var database: DatabaseOption

    func run() async throws {
        guard case .sqlite(let path)? = try database.store(file: file) else {
            throw ValidationError("backup copies a SQLite file: give its path or --database sqlite:<path>")
        }
        try await SyncServer.backUp(sqlite: path, to: destination)
        print("modelsync-server: backed up \(path) to \(destination)")
    }
}

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make an email's built-in account an admin with a password, creating it if need be (the first admin).",
        discussion: """
            Works on the data directly: stop a server that serves the JSON file first (it would write \
            its own copy back); over --database, running servers see the change from their next \
            request. An existing account gets the new password and is signed out everywhere.
            """
    )

    @Argument(help: "The admin's email address.")
    var email: String

    @Argument(help: "The JSON file (or --database).")
    var file: String?

    @OptionGroup var database: DatabaseOption

    @Option(help: "A file holding the password (its first line); - reads it from standard input.")
    var passwordFile: String

    @Option(help: "The collection of the accounts' records.")
    var accountsCollection = "users"

    func validate() throws {
        guard (file == nil) != (database.database == nil) else {
            throw ValidationError("give either a JSON file or --database, not both")
        }
        guard StoredAccount.normalizedEmail(email) != nil else { throw ValidationError("\(email) is not an email address") }
    }

    func run() async throws {
        let bytes = passwordFile == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: passwordFile))
        let password = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard password.count >= 8 else { throw ValidationError("the password must have at least 8 characters") }
        let passwords = try BcryptPasswordHasher()
        let made: (userID: String, created: Bool)
        switch try database.store(file: file) {
        case .postgres(let database)?:
            made = try await SyncServer.makeAdmin(email: email, password: password, passwords: passwords, database: database, accountsCollection: accountsCollection)
        case .sqlite(let path)?:
            made = try await SyncServer.makeAdmin(email: email, password: password, passwords: passwords, sqlite: path, accountsCollection: accountsCollection)
        case nil:
            made = try await SyncServer.makeAdmin(
                email: email, password: password, passwords: passwords, file: URL(fileURLWithPath: file ?? ""), accountsCollection: accountsCollection)
        }
        print("modelsync-server: \(made.created ? "created" : "updated") the admin account \(made.userID) (\(email))")
    }
}
