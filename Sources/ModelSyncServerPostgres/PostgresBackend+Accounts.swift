import Foundation
import Logging
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

extension PostgresBackend {
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
