import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer

/// The built-in accounts and their refresh tokens, in tables of their own (no route serves
/// them): every lookup goes through an index (email, user id, token hash, family).
extension SQLiteBackend: ServerAccountStore {
    package func register(email: String, passwordHash: String, profile: JSONObject, in collection: String) async throws -> (user: JSONValue, account: StoredAccount) {
        let limits = feedLimits
        return try await writing { connection, state in
            try Self.requireCollection(collection, connection)
            // One address, one account: an account's, or a record's without an account (data
            // imported with users but without accounts). An account's own record is its user's to
            // edit, and an email typed there must not take another's registration.
            let taken = try connection.scalar(
                """
                SELECT EXISTS (SELECT 1 FROM \(SQLiteSchema.accounts) WHERE email = ?1) OR EXISTS (SELECT 1 FROM \(SQLiteSchema.records) AS r \
                WHERE r.collection = ?2 AND modelsync_email(json_extract(r.record, '$.email')) = ?1 \
                AND NOT EXISTS (SELECT 1 FROM \(SQLiteSchema.accounts) AS a WHERE a.user_id = r.id_text AND a.collection = ?2))
                """, [.text(email), .text(collection)])
            guard taken?.integerValue == 0 else { throw APIError(status: 409, message: "an account with this email exists") }
            let created = try Self.apply(ItemOperation(write: .create(collection: collection, body: profile)), connection, &state, limits: limits)
            guard let userID = recordID(of: created.body) else { throw APIError(status: 500, message: "the account's record has no id") }
            try connection.execute(
                "INSERT INTO \(SQLiteSchema.accounts) (email, collection, user_id, password_hash) VALUES (?, ?, ?, ?)",
                [.text(email), .text(collection), .text(userID), .text(passwordHash)])
            return (user: created.body, account: StoredAccount(userID: userID, passwordHash: passwordHash))
        }
    }

    package func account(email: String, in collection: String) async throws -> (user: JSONValue, account: StoredAccount)? {
        try await reading { connection in
            guard let row = try connection.rows(
                """
                SELECT a.user_id, a.password_hash, a.role, a.generation, r.record FROM \(SQLiteSchema.accounts) AS a \
                JOIN \(SQLiteSchema.records) AS r ON r.collection = ?2 AND r.id_text = a.user_id WHERE a.email = ?1
                """, [.text(email), .text(collection)]).first
            else { return nil }
            return (user: try Self.parsed(row[4]), account: Self.account(row))
        }
    }

    /// An account from a row of user id, password hash, role and generation.
    private static func account(_ row: [SQLValue]) -> StoredAccount {
        StoredAccount(userID: row[0].textValue ?? "", passwordHash: row[1].textValue ?? "", role: row[2].textValue, generation: Int(row[3].integerValue ?? 0))
    }

    package func account(userID: String, in collection: String) async throws -> StoredAccount? {
        try await reading { connection in
            // Joined with the record: an account whose record was deleted signs no one in.
            try connection.rows(
                """
                SELECT a.user_id, a.password_hash, a.role, a.generation FROM \(SQLiteSchema.accounts) AS a \
                JOIN \(SQLiteSchema.records) AS r ON r.collection = a.collection AND r.id_text = a.user_id WHERE a.user_id = ? AND a.collection = ?
                """, [.text(userID), .text(collection)]).first.map(Self.account)
        }
    }

    package func currentAccount(userID: String, in collection: String) async throws -> StoredAccount? {
        try await reading { connection in
            try connection.rows(
                "SELECT user_id, password_hash, role, generation FROM \(SQLiteSchema.accounts) WHERE user_id = ? AND collection = ?",
                [.text(userID), .text(collection)]).first.map(Self.account)
        }
    }

    package func setRole(_ role: String?, userID: String) async throws -> StoredAccount? {
        try await writing { connection, _ in
            try connection.rows(
                "UPDATE \(SQLiteSchema.accounts) SET role = ? WHERE user_id = ? RETURNING user_id, password_hash, role, generation",
                [role.map(SQLValue.text) ?? .null, .text(userID)]).first.map(Self.account)
        }
    }

    package func endSessions(userID: String, newPasswordHash: String?) async throws -> StoredAccount? {
        try await writing { connection, _ in
            let updated = try connection.rows(
                """
                UPDATE \(SQLiteSchema.accounts) SET generation = generation + 1, password_hash = coalesce(?, password_hash) \
                WHERE user_id = ? RETURNING user_id, password_hash, role, generation
                """, [newPasswordHash.map(SQLValue.text) ?? .null, .text(userID)]).first.map(Self.account)
            guard let updated else { return nil }
            try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE user_id = ?", [.text(userID)])
            return updated
        }
    }

    package func adoptPasswordHashes(in collection: String, isHash: @Sendable (String) -> Bool) async throws -> Int {
        guard resource(named: collection) == .collection else { return 0 }
        // The test of each hash runs where it is called: read first, then write what it decided.
        let found = try await reading { connection in
            try connection.rows(
                "SELECT id_text, json_extract(record, '$.password') FROM \(SQLiteSchema.records) WHERE collection = ? AND json_type(record, '$.password') IS NOT NULL",
                [.text(collection)])
        }
        guard !found.isEmpty else { return 0 }
        let hashes = Set(found.compactMap { row -> String? in
            guard case .text(let password) = row[1], isHash(password) else { return nil }
            return row[0].textValue
        })
        return try await writing { connection, state in
            var adopted = 0
            let rows = try connection.rows(
                "SELECT row_id, record, created_with FROM \(SQLiteSchema.records) WHERE collection = ? AND json_type(record, '$.password') IS NOT NULL",
                [.text(collection)])
            for row in rows {
                guard var record = try Self.parsed(row[1]).objectValue, let password = record["password"] else { continue }
                // The hash goes whatever happens: no path may serve it.
                record["password"] = nil
                adopted += 1
                let stored = JSONValue.object(record)
                // A new version: the feed and the streams carry the record without it.
                let version = state.next()
                try connection.execute(
                    "UPDATE \(SQLiteSchema.records) SET record = ?, version = ? WHERE row_id = ?", [Self.text(stored), .integer(Int64(version)), row[0]])
                state.changes.append(SyncChange(sequence: version, collection: collection, id: stored["id"] ?? .null, record: stored, createdWith: row[2].textValue))
                guard let hash = password.stringValue, let userID = recordID(of: stored), hashes.contains(userID),
                      let email = record["email"]?.stringValue.flatMap(StoredAccount.normalizedEmail)
                else { continue }
                try connection.execute(
                    """
                    INSERT OR IGNORE INTO \(SQLiteSchema.accounts) (email, collection, user_id, password_hash) SELECT ?1, ?2, ?3, ?4 \
                    WHERE NOT EXISTS (SELECT 1 FROM \(SQLiteSchema.accounts) WHERE user_id = ?3 AND collection = ?2)
                    """, [.text(email), .text(collection), .text(userID), .text(hash)])
            }
            return adopted
        }
    }

    // MARK: Refresh tokens

    package func storeRefreshToken(_ token: StoredRefreshToken) async throws {
        try await writing { connection, state in
            // Expired tokens are of no use, not even to detect a reuse: they go by their index.
            try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE expires <= ?", [.real(state.now.timeIntervalSince1970)])
            try Self.storeRefreshToken(token, connection)
        }
    }

    static func storeRefreshToken(_ token: StoredRefreshToken, _ connection: SQLiteConnection) throws {
        try connection.execute(
            """
            INSERT OR REPLACE INTO \(SQLiteSchema.refreshTokens) (hash, user_id, family, expires, rotated, successor, sealed_successor) \
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(token.hash), .text(token.userID), .text(token.family), .real(token.expires.timeIntervalSince1970),
                token.rotated.map { .real($0.timeIntervalSince1970) } ?? .null, token.successor.map(SQLValue.text) ?? .null,
                token.sealedSuccessor.map(SQLValue.text) ?? .null,
            ])
    }

    /// The refresh tokens `condition` selects.
    static func refreshTokens(where condition: String, _ arguments: [SQLValue], _ connection: SQLiteConnection) throws -> [StoredRefreshToken] {
        try connection.rows(
            "SELECT hash, user_id, family, expires, rotated, successor, sealed_successor FROM \(SQLiteSchema.refreshTokens) WHERE \(condition)", arguments
        ).map { row in
            func date(_ value: SQLValue) -> Date? {
                switch value {
                case .real(let seconds): Date(timeIntervalSince1970: seconds)
                case .integer(let seconds): Date(timeIntervalSince1970: TimeInterval(seconds))
                default: nil
                }
            }
            return StoredRefreshToken(
                hash: row[0].textValue ?? "", userID: row[1].textValue ?? "", family: row[2].textValue ?? "", expires: date(row[3]) ?? Date(timeIntervalSince1970: 0),
                rotated: date(row[4]), successor: row[5].textValue, sealedSuccessor: row[6].textValue)
        }
    }

    package func refreshToken(hash: String) async throws -> StoredRefreshToken? {
        try await reading { connection in try Self.refreshTokens(where: "hash = ?", [.text(hash)], connection).first }
    }

    package func exchangeRefreshToken(
        hash: String, family: String, successorHash: String, sealedSuccessor: String, successorExpires: Date, now: Date, retryWindow: Duration
    ) async throws -> RefreshTokenExchange {
        // On the writer: two exchanges in one family take turns.
        try await writing { connection, _ in
            let token = try Self.refreshTokens(where: "hash = ?", [.text(hash)], connection).first
            let familyRow = try connection.scalar("SELECT 1 FROM \(SQLiteSchema.refreshTokens) WHERE family = ?", [.text(family)])
            let familyKnown = token == nil && familyRow != nil
            let successorUnused = try token?.successor.flatMap { try Self.refreshTokens(where: "hash = ?", [.text($0)], connection).first }.map { $0.rotated == nil } ?? false
            switch RefreshTokenExchange.decide(token, family: family, familyKnown: familyKnown, successorUnused: successorUnused, now: now, retryWindow: retryWindow) {
            case .invalid:
                // Only an expired token goes.
                if let token, token.expires <= now { try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE hash = ?", [.text(hash)]) }
                return .invalid
            case .rotate:
                guard var token else { return .invalid }
                // The token before this one is of no use now (its successor is used): gone.
                try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE family = ? AND rotated IS NOT NULL", [.text(token.family)])
                try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE expires <= ?", [.real(now.timeIntervalSince1970)])
                (token.rotated, token.successor, token.sealedSuccessor) = (now, successorHash, sealedSuccessor)
                try Self.storeRefreshToken(token, connection)
                try Self.storeRefreshToken(
                    StoredRefreshToken(hash: successorHash, userID: token.userID, family: token.family, expires: successorExpires), connection)
                return .rotated(userID: token.userID)
            case .retry(let sealed):
                return .retried(userID: token?.userID ?? "", sealedSuccessor: sealed)
            case .revokeFamily:
                try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE family = ?", [.text(family)])
                return .reused
            }
        }
    }

    package func revokeRefreshTokens(family: String) async throws {
        try await writing { connection, _ in
            try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE family = ?", [.text(family)])
        }
    }
}
