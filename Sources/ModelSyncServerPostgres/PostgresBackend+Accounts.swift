import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncServer
import PostgresNIO

/// The built-in accounts' refresh tokens in PostgreSQL: one table of its own,
/// `modelsync_refresh_tokens` (hash, user, family, expiry, and once exchanged when, its
/// successor's hash and the sealed successor), made when a server opens the schema.
extension PostgresSchema {
    var refreshTokens: String { quoted + ".modelsync_refresh_tokens" }

    var refreshTokenCreation: [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS \(refreshTokens) (
                hash text PRIMARY KEY, user_id text NOT NULL, family text NOT NULL, expires timestamptz NOT NULL,
                rotated timestamptz, successor text, sealed_successor text)
            """,
            "CREATE INDEX IF NOT EXISTS modelsync_refresh_tokens_family ON \(refreshTokens) (family)",
            "CREATE INDEX IF NOT EXISTS modelsync_refresh_tokens_expires ON \(refreshTokens) (expires)",
        ]
    }
}

/// The built-in accounts in PostgreSQL: credentials in `modelsync_accounts` (read by the
/// server's own work, `modelsync.system`), roles, generations and refresh tokens.
extension PostgresBackend: ServerAccountStore {
    // MARK: Accounts

    func register(email: String, passwordHash: String, profile: JSONObject, in collection: String) async throws -> (user: JSONValue, account: StoredAccount) {
        let table = try table(of: collection)
        let now = Date()
        return try await writing(as: .anonymous, system: true) { connection, state in
            // The email as the accounts table keys it, and as the records hold it (data imported with
            // users but without accounts): one address, one account. The state row's lock, held
            // from the start, makes the check and the insert one step for every server.
            // A record's email counts only for a record without an account: an account's own record
            // is its user's to edit, and an email typed there must not take another's registration.
            var taken = BoundSQL("SELECT EXISTS (SELECT 1 FROM \(schema.accounts) WHERE email = ")
            let address = taken.bind(email)
            taken.append("\(address)) OR EXISTS (SELECT 1 FROM \(table) AS r WHERE lower(btrim(r.record ->> 'email')) = \(address) ")
            taken.append("AND NOT EXISTS (SELECT 1 FROM \(schema.accounts) AS a WHERE a.user_id = r.id_text AND a.collection = \(taken.bind(collection))))")
            let exists: Bool? = try await connection.guardedFirst(taken.query, as: Bool.self, logger: logger)
            if exists == true {
                throw APIError(status: 409, message: "an account with this email exists")
            }
            let created = try await apply(ItemOperation(write: .create(collection: collection, body: profile)), connection, &state, now: now)
            guard let userID = recordID(of: created.body) else { throw APIError(status: 500, message: "the account's record has no id") }
            var insert = BoundSQL("INSERT INTO \(schema.accounts) (email, collection, user_id, password_hash) VALUES (")
            insert.append("\(insert.bind(email)), \(insert.bind(collection)), \(insert.bind(userID)), \(insert.bind(passwordHash))) ON CONFLICT (email) DO NOTHING RETURNING 1")
            // The primary key stands even for a writer that skipped the lock.
            guard try await connection.guardedFirst(insert.query, as: Int32.self, logger: logger) != nil else {
                throw APIError(status: 409, message: "an account with this email exists")
            }
            return ((user: created.body, account: StoredAccount(userID: userID, passwordHash: passwordHash)), changed: true)
        }
    }

    func account(email: String, in collection: String) async throws -> (user: JSONValue, account: StoredAccount)? {
        let table = try table(of: collection)
        return try await reading(as: .anonymous, system: true) { connection in
            var select = BoundSQL("SELECT a.user_id, a.password_hash, a.role, a.generation, r.record::text FROM \(schema.accounts) AS a JOIN \(table) AS r ON r.id_text = a.user_id WHERE a.email = ")
            select.append(select.bind(email))
            guard let (userID, hash, role, generation, text) = try await connection.guardedFirst(
                select.query, as: (String, String, String?, Int64, String).self, logger: logger)
            else {
                return nil
            }
            return (user: try JSONValue(parsing: Array(text.utf8)), account: StoredAccount(userID: userID, passwordHash: hash, role: role, generation: Int(generation)))
        }
    }

    /// Gives an accounts table made by an earlier version its generation column and the index by
    /// user id (servers starting together take turns).
    static func upgradeAccounts(_ schema: PostgresSchema, _ client: PostgresClient, _ logger: Logger) async throws {
        // Done already, or no accounts table to upgrade (an empty schema).
        var exists = BoundSQL("SELECT to_regclass(")
        exists.append(exists.bind(schema.quoted + ".modelsync_accounts_user") + ") IS NOT NULL OR to_regclass(" + exists.bind(schema.accounts) + ") IS NULL")
        let done: Bool = try await client.guardedRows(exists.query, as: Bool.self, logger: logger).first ?? false
        guard !done else { return }
        try await client.guardedTransaction(logger: logger) { connection in
            try await connection.guardedRun(schema.changeLock, logger: logger)
            for statement in schema.accountUpgrades { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
        }
    }

    /// The credentials of the account of `userID` as they are now: one indexed read of the
    /// accounts table (no policies there), outside a transaction. A deleted record takes its
    /// credentials with it (``endAccount(userID:collection:_:)``).
    func currentAccount(userID: String, in collection: String) async throws -> StoredAccount? {
        var select = BoundSQL("SELECT password_hash, role, generation FROM \(schema.accounts) WHERE user_id = ")
        select.append("\(select.bind(userID)) AND collection = \(select.bind(collection))")
        do {
            guard let (hash, role, generation) = try await client.guardedRows(select.query, as: (String, String?, Int64).self, logger: logger).first else { return nil }
            return StoredAccount(userID: userID, passwordHash: hash, role: role, generation: Int(generation))
        } catch {
            throw Self.serverError(error)
        }
    }

    /// Removes the credentials and refresh tokens of the account whose record was deleted, in the
    /// deleting transaction.
    func endAccount(userID: String, collection: String, _ connection: PostgresConnection) async throws {
        var delete = BoundSQL("DELETE FROM \(schema.accounts) WHERE user_id = ")
        delete.append("\(delete.bind(userID)) AND collection = \(delete.bind(collection))")
        try await connection.guardedRun(delete.query, logger: logger)
        var tokens = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE user_id = ")
        tokens.append(tokens.bind(userID))
        try await connection.guardedRun(tokens.query, logger: logger)
    }

    func endSessions(userID: String, newPasswordHash: String?) async throws -> StoredAccount? {
        try await writing(as: .anonymous, system: true) { connection, _ in
            var update = BoundSQL("UPDATE \(schema.accounts) SET generation = generation + 1")
            if let newPasswordHash { update.append(", password_hash = \(update.bind(newPasswordHash))") }
            update.append(" WHERE user_id = \(update.bind(userID)) RETURNING password_hash, role, generation")
            guard let (hash, role, generation) = try await connection.guardedFirst(update.query, as: (String, String?, Int64).self, logger: logger) else {
                return (nil, changed: false)
            }
            var tokens = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE user_id = ")
            tokens.append(tokens.bind(userID))
            try await connection.guardedRun(tokens.query, logger: logger)
            // No record changed: the sequence stays, no stream is told.
            return (StoredAccount(userID: userID, passwordHash: hash, role: role, generation: Int(generation)), changed: false)
        }
    }

    func adoptPasswordHashes(in collection: String, isHash: @Sendable (String) -> Bool) async throws -> Int {
        guard let table = try? table(of: collection) else { return 0 }
        return try await writing(as: .anonymous, system: true) { connection, state in
            let select = BoundSQL("SELECT row_id, id_text, record ->> 'email', record -> 'password' #>> '{}' FROM \(table) WHERE record ? 'password' FOR UPDATE")
            var found: [(Int64, String, String?, String?)] = []
            for try await row in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String?, String?).self) { found.append(row) }
            guard !found.isEmpty else { return (0, changed: false) }
            for (rowID, userID, email, password) in found {
                if let password, isHash(password), let email = email.flatMap(StoredAccount.normalizedEmail) {
                    var insert = BoundSQL("INSERT INTO \(schema.accounts) (email, collection, user_id, password_hash) SELECT ")
                    insert.append("\(insert.bind(email)), \(insert.bind(collection)), \(insert.bind(userID)), \(insert.bind(password)) ")
                    insert.append("WHERE NOT EXISTS (SELECT 1 FROM \(schema.accounts) WHERE user_id = \(insert.bind(userID)) AND collection = \(insert.bind(collection))) ")
                    insert.append("ON CONFLICT (email) DO NOTHING")
                    try await connection.guardedRun(insert.query, logger: logger)
                }
                // The hash goes whatever happens: no path may serve it. A new version, so that the
                // feed and the streams carry the record without it.
                var update = BoundSQL("UPDATE \(table) SET record = record - 'password', version = ")
                update.append("\(update.bind(state.next())) WHERE row_id = \(update.bind(rowID))")
                try await connection.guardedRun(update.query, logger: logger)
            }
            return (found.count, changed: true)
        }
    }

    // MARK: Refresh tokens

    /// Makes the refresh tokens' table when it is missing (servers starting together take turns).
    static func addRefreshTokenTable(_ schema: PostgresSchema, _ client: PostgresClient, _ logger: Logger) async throws {
        var exists = BoundSQL("SELECT to_regclass(")
        exists.append(exists.bind(schema.refreshTokens) + ") IS NOT NULL")
        let found = try await client.guardedRows(exists.query, as: Bool.self, logger: logger).first ?? false
        guard !found else { return }
        try await client.guardedTransaction(logger: logger) { connection in
            try await connection.guardedRun(schema.changeLock, logger: logger)
            for statement in schema.refreshTokenCreation { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
        }
    }

    func account(userID: String, in collection: String) async throws -> StoredAccount? {
        let table = try table(of: collection)
        return try await reading(as: .anonymous, system: true) { connection in
            // Joined with the record: an account whose record was deleted signs no one in.
            var select = BoundSQL("SELECT a.password_hash, a.role, a.generation FROM \(schema.accounts) AS a JOIN \(table) AS r ON r.id_text = a.user_id WHERE a.user_id = ")
            select.append("\(select.bind(userID)) AND a.collection = \(select.bind(collection))")
            guard let (hash, role, generation) = try await connection.guardedFirst(select.query, as: (String, String?, Int64).self, logger: logger) else { return nil }
            return StoredAccount(userID: userID, passwordHash: hash, role: role, generation: Int(generation))
        }
    }

    func setRole(_ role: String?, userID: String) async throws -> StoredAccount? {
        try await writing(as: .anonymous, system: true) { connection, _ in
            var update = BoundSQL("UPDATE \(schema.accounts) SET role = ")
            update.append("\(update.bindOrNull(role)) WHERE user_id = \(update.bind(userID)) RETURNING password_hash, role, generation")
            let row = try await connection.guardedFirst(update.query, as: (String, String?, Int64).self, logger: logger)
            // No record changed: the sequence stays, no stream is told.
            return (row.map { StoredAccount(userID: userID, passwordHash: $0.0, role: $0.1, generation: Int($0.2)) }, changed: false)
        }
    }

    func storeRefreshToken(_ token: StoredRefreshToken) async throws {
        try await refreshTokenTransaction { connection in
            var drop = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE expires <= ")
            drop.append(drop.bind(Date()))
            try await connection.guardedRun(drop.query, logger: logger)
            var insert = BoundSQL("INSERT INTO \(schema.refreshTokens) (hash, user_id, family, expires) VALUES (")
            insert.append([insert.bind(token.hash), insert.bind(token.userID), insert.bind(token.family), insert.bind(token.expires)].joined(separator: ", ") + ")")
            try await connection.guardedRun(insert.query, logger: logger)
        }
    }

    func refreshToken(hash: String) async throws -> StoredRefreshToken? {
        try await refreshTokenTransaction { connection in try await Self.readRefreshToken(hash, lock: false, schema, connection, logger) }
    }

    func exchangeRefreshToken(
        hash: String, family: String, successorHash: String, sealedSuccessor: String, successorExpires: Date, now: Date, retryWindow: Duration
    ) async throws -> RefreshTokenExchange {
        try await refreshTokenTransaction { connection in
            // The family's rows stay locked to the commit: two exchanges in one family take turns.
            var lock = BoundSQL("SELECT hash FROM \(schema.refreshTokens) WHERE family = ")
            lock.append(lock.bind(family) + " FOR UPDATE")
            var familyKnown = false
            for try await _ in try await connection.guardedQuery(lock.query, logger: logger) { familyKnown = true }
            let token = try await Self.readRefreshToken(hash, lock: false, schema, connection, logger)
            var successorUnused = false
            if let successor = token?.successor {
                successorUnused = try await Self.readRefreshToken(successor, lock: false, schema, connection, logger).map { $0.rotated == nil } ?? false
            }
            let decision = RefreshTokenExchange.decide(
                token, family: family, familyKnown: familyKnown && token == nil, successorUnused: successorUnused, now: now, retryWindow: retryWindow)
            switch decision {
            case .invalid:
                // Only an expired token goes.
                if let token, token.expires <= now {
                    var delete = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE hash = ")
                    delete.append(delete.bind(hash))
                    try await connection.guardedRun(delete.query, logger: logger)
                }
                return .invalid
            case .rotate:
                guard let token else { return .invalid }
                // The token before this one is of no use now (its successor is used): gone.
                var prune = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE family = ")
                prune.append(prune.bind(token.family) + " AND rotated IS NOT NULL")
                try await connection.guardedRun(prune.query, logger: logger)
                var update = BoundSQL("UPDATE \(schema.refreshTokens) SET rotated = ")
                update.append(update.bind(now) + ", successor = " + update.bind(successorHash) + ", sealed_successor = " + update.bind(sealedSuccessor))
                update.append(" WHERE hash = " + update.bind(hash))
                try await connection.guardedRun(update.query, logger: logger)
                var insert = BoundSQL("INSERT INTO \(schema.refreshTokens) (hash, user_id, family, expires) VALUES (")
                insert.append([insert.bind(successorHash), insert.bind(token.userID), insert.bind(token.family), insert.bind(successorExpires)].joined(separator: ", ") + ")")
                try await connection.guardedRun(insert.query, logger: logger)
                return .rotated(userID: token.userID)
            case .retry(let sealed):
                return .retried(userID: token?.userID ?? "", sealedSuccessor: sealed)
            case .revokeFamily:
                var delete = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE family = ")
                delete.append(delete.bind(family))
                try await connection.guardedRun(delete.query, logger: logger)
                return .reused
            }
        }
    }

    func revokeRefreshTokens(family: String) async throws {
        try await refreshTokenTransaction { connection in
            var delete = BoundSQL("DELETE FROM \(schema.refreshTokens) WHERE family = ")
            delete.append(delete.bind(family))
            try await connection.guardedRun(delete.query, logger: logger)
        }
    }

    private func refreshTokenTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.guardedTransaction(logger: logger) { connection in try await body(connection) }
        } catch {
            throw Self.serverError(error)
        }
    }

    private static func readRefreshToken(
        _ hash: String, lock: Bool, _ schema: PostgresSchema, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> StoredRefreshToken? {
        var select = BoundSQL("SELECT user_id, family, expires, rotated, successor, sealed_successor FROM \(schema.refreshTokens) WHERE hash = ")
        select.append(select.bind(hash) + (lock ? " FOR UPDATE" : ""))
        guard let (userID, family, expires, rotated, successor, sealed) = try await connection.guardedFirst(
            select.query, as: (String, String, Date, Date?, String?, String?).self, logger: logger)
        else { return nil }
        return StoredRefreshToken(hash: hash, userID: userID, family: family, expires: expires, rotated: rotated, successor: successor, sealedSuccessor: sealed)
    }
}
