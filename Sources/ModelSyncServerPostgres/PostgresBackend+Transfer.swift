import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

/// Moving data between a JSON document and PostgreSQL, bookkeeping included: records keep their
/// versions, so clients' feed cursors stay valid across the move. A reset is such a move.
extension PostgresBackend {
    /// Puts back the data the server started with (`SyncServer.start(data:database:)`), as an
    /// import over it would, and rewinds the change streams.
    func reset() async throws {
        guard let initialData else {
            throw ServerError.database("only a server started with data can be reset (SyncServer.start(data:database:))")
        }
        do {
            let replacement = try await Self.replaceData(with: initialData, schema: schema, client: client, logger: logger)
            // Before answering, so that a stream opened after the reset is not ended by it; the
            // notification does the same on the other servers (and finds this one done).
            await relay.rewind(replacement)
            // The tables were made again: so are their policies.
            try await Self.installRowSecurity(rowSecurity, schema: schema, tables: Self.collectionTables(resources), client: client, logger: logger)
        } catch {
            throw Self.serverError(error)
        }
    }

    /// Creates the tables in `schema` and loads `data` (a JSON document as the JSON backend
    /// saves it, with or without its `_modelsync` bookkeeping), in one transaction.
    ///
    /// - Throws: ``ServerError/cannotImport(_:)`` when the schema already holds data and
    ///   `replacing` is false, when the data is not an object, or when PostgreSQL cannot hold it
    ///   (two items with one id, a NUL character); nothing is changed then.
    static func importData(_ data: JSONValue, schema: PostgresSchema, client: PostgresClient, replacing: Bool, logger: Logger) async throws {
        guard var root = data.objectValue else { throw ServerError.notAnObject }
        if data.containsNUL { throw ServerError.cannotImport("PostgreSQL cannot store the character U+0000 (NUL)") }
        let book = Bookkeeping.extract(from: &root)
        let importedRoot = root
        do {
            try await client.guardedTransaction(logger: logger) { connection in
                // An import is one long transaction, and waits for others (a reset runs on the
                // server's connections, which have a statement timeout).
                try await connection.guardedRun("SET LOCAL statement_timeout = 0", logger: logger)
                // One import at a time per schema, whatever else runs.
                try await connection.guardedRun(schema.changeLock, logger: logger)
                // One row: the state table's name, NULL when the schema has none.
                let replaces: Bool
                var security: SavedRowSecurity?
                if let table = try await connection.guardedFirst(schema.holdsData, as: String?.self, logger: logger), table != nil {
                    guard replacing else { throw ServerError.cannotImport("the schema \(schema.name) already holds data (replace it with --replace)") }
                    security = try await SavedRowSecurity.read(schema, connection, logger)
                    for statement in schema.removal { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
                    replaces = true
                } else {
                    replaces = false
                }
                for statement in schema.creation { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
                try await load(importedRoot, book, schema, connection, logger)
                // Servers under access rules may be running on the schema: the new tables are
                // guarded as the old ones were from the commit on, not from their next start.
                try await security?.restore(schema, connection, logger)
                // Servers running on the schema rewind their change streams.
                if replaces { try await notify(DataReplacement(sequence: book.sequence), schema, connection, logger) }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw ServerError.cannotImport("two items of one collection have the same id (\(error.serverInfo?[.detail] ?? ""))")
        } catch {
            throw serverError(error)
        }
    }

    /// Puts `data` back as the whole content (what `reset()` does). Returns the replacement, as
    /// every server on the schema is told of it.
    static func replaceData(with data: JSONValue, schema: PostgresSchema, client: PostgresClient, logger: Logger) async throws -> DataReplacement {
        guard var root = data.objectValue else { throw ServerError.notAnObject }
        let book = Bookkeeping.extract(from: &root)
        let replaced = root
        let replacement = DataReplacement(sequence: book.sequence)
        try await client.guardedTransaction(logger: logger) { connection in
            try await connection.guardedRun(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(schema.state) FOR UPDATE"), logger: logger)
            var tables: [String] = []
            let query = PostgresQuery(unsafeSQL: "SELECT table_name FROM \(schema.resources) WHERE table_name IS NOT NULL")
            for try await table in try await connection.guardedQuery(query, logger: logger).decode(String.self) { tables.append(table) }
            try await connection.guardedRun(PostgresQuery(unsafeSQL: "DROP VIEW IF EXISTS \(schema.allRecords)"), logger: logger)
            for table in tables {
                try await connection.guardedRun(PostgresQuery(unsafeSQL: "DROP TABLE \(schema.table(table))"), logger: logger)
                // The data put back may have fewer collections; `load` creates the functions it needs.
                try await connection.guardedRun(PostgresQuery(unsafeSQL: "DROP FUNCTION IF EXISTS \(schema.writeFunctionSignature(table))"), logger: logger)
            }
            for table in [schema.resources, schema.tombstones, schema.idempotencyKeys, schema.accounts, schema.state] {
                try await connection.guardedRun(PostgresQuery(unsafeSQL: "DELETE FROM \(table)"), logger: logger)
            }
            try await load(replaced, book, schema, connection, logger)
            try await notify(replacement, schema, connection, logger)
        }
        return replacement
    }

    /// Tells the servers on the schema, at the commit, that its data was replaced.
    private static func notify(_ replacement: DataReplacement, _ schema: PostgresSchema, _ connection: PostgresConnection, _ logger: Logger) async throws {
        var notify = BoundSQL("SELECT pg_notify(")
        notify.append("\(notify.bind(schema.channel)), \(notify.bind(replacement.payload)))")
        try await connection.guardedRun(notify.query, logger: logger)
    }

    private static func load(_ root: JSONObject, _ book: Bookkeeping, _ schema: PostgresSchema, _ connection: PostgresConnection, _ logger: Logger) async throws {
        var sequence = book.sequence
        var tables: [String] = []
        for (position, (name, value)) in root.enumerated() {
            var insert = BoundSQL("INSERT INTO \(schema.resources) (name, position, deleted_id, kind, table_name, value) VALUES (")
            insert.append("\(insert.bind(name)), \(insert.bind(position)), \(insert.bind(book.deletedIDs[name] ?? 0)), ")
            switch value {
            case .array(let items):
                let table = "modelsync_records_\(position)"
                tables.append(table)
                insert.append("'collection', \(insert.bind(table)), NULL)")
                try await connection.guardedRun(insert.query, logger: logger)
                for statement in schema.collectionTable(table) { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
                // Every record keeps its version; one without (a second record with an id
                // already seen, or no id) gets the next.
                var versions: [Int] = []
                // "" for none: a text[] binding holds no NULL.
                var origins: [String] = []
                var seen = Set<ExactText>()
                for item in items {
                    if let id = recordID(of: item), seen.insert(ExactText(id)).inserted, let stamp = book.versions[name]?[ExactText(id)] {
                        versions.append(stamp.version)
                        origins.append(stamp.createdWith ?? "")
                    } else {
                        sequence += 1
                        versions.append(sequence)
                        origins.append("")
                    }
                }
                var rows = BoundSQL("INSERT INTO \(schema.table(table)) (id_text, version, record, created_with) ")
                rows.append("SELECT \(schema.textFunction)(item.value -> 'id'), versions.version, item.value, nullif(versions.created_with, '') ")
                rows.append("FROM jsonb_array_elements(\(rows.bind(json: value))) WITH ORDINALITY AS item(value, n) ")
                rows.append("JOIN unnest(\(rows.bind(versions))::bigint[], \(rows.bind(origins))::text[]) WITH ORDINALITY AS versions(version, created_with, n) USING (n) ORDER BY n")
                try await connection.guardedRun(rows.query, logger: logger)
            case .object:
                insert.append("'singular', NULL, \(insert.bind(json: value)))")
                try await connection.guardedRun(insert.query, logger: logger)
            default:
                insert.append("'value', NULL, \(insert.bind(json: value)))")
                try await connection.guardedRun(insert.query, logger: logger)
            }
        }
        for stone in book.tombstones {
            var insert = BoundSQL("INSERT INTO \(schema.tombstones) (sequence, collection, id, at, owner, fields, departed) VALUES (")
            insert.append("\(insert.bind(stone.sequence)), \(insert.bind(stone.collection)), \(insert.bind(json: stone.id)), \(insert.bind(Date(timeIntervalSince1970: TimeInterval(stone.at)))), ")
            insert.append("\(insert.bindOrNull(stone.owner)), \(stone.fields.map { insert.bind(json: .object($0)) } ?? "NULL"), \(insert.bind(stone.departed)))")
            try await connection.guardedRun(insert.query, logger: logger)
        }
        for (key, record) in book.idempotency {
            guard let collection = record["collection"]?.stringValue, let request = record["request"], let response = record["response"] else { continue }
            var insert = BoundSQL("INSERT INTO \(schema.idempotencyKeys) (key, collection, request, response, status, version, at) VALUES (")
            insert.append("\(insert.bind(key)), \(insert.bind(collection)), \(insert.bind(json: request)), \(insert.bind(json: response)), ")
            insert.append("\(insert.bindOrNull(record["status"]?.intValue)), \(insert.bindOrNull(record["version"]?.intValue)), ")
            insert.append("\(insert.bind(Date(timeIntervalSince1970: record["at"]?.doubleValue ?? 0))))")
            try await connection.guardedRun(insert.query, logger: logger)
        }
        for (email, account) in book.accounts {
            var insert = BoundSQL("INSERT INTO \(schema.accounts) (email, collection, user_id, password_hash, role, generation) VALUES (")
            // The JSON backend keeps no collection per account: the default accounts collection.
            insert.append("\(insert.bind(email)), 'users', \(insert.bind(account.userID)), \(insert.bind(account.passwordHash)), \(insert.bindOrNull(account.role)), ")
            insert.append("\(insert.bind(account.generation)))")
            try await connection.guardedRun(insert.query, logger: logger)
        }
        try await connection.guardedRun(PostgresQuery(unsafeSQL: schema.allRecordsView(over: tables)), logger: logger)
        var state = BoundSQL("INSERT INTO \(schema.state) (sequence, horizon, modified) VALUES (")
        state.append("\(state.bind(sequence)), \(state.bind(book.horizon)), date_trunc('second', now()))")
        try await connection.guardedRun(state.query, logger: logger)
    }

    /// The data as the JSON backend saves it: the collections and resources, and the
    /// bookkeeping under `_modelsync` (versions, tombstones, idempotency keys).
    static func exportData(schema: PostgresSchema, client: PostgresClient, logger: Logger) async throws -> JSONValue {
        do {
            return try await client.guardedTransaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger) { connection in
                // Every row, whatever row-level security a server under access rules left on.
                try await connection.guardedRun("SELECT set_config('modelsync.system', 'on', true)", logger: logger)
                var book = Bookkeeping()
                let state = PostgresQuery(unsafeSQL: "SELECT sequence, horizon FROM \(schema.state)")
                if let (sequence, horizon) = try await connection.guardedFirst(state, as: (Int64, Int64).self, logger: logger) {
                    (book.sequence, book.horizon) = (Int(sequence), Int(horizon))
                }
                var root = JSONObject()
                var members: [(String, String?, String?, String)] = []
                let resources = PostgresQuery(unsafeSQL: "SELECT name, table_name, value::text, deleted_id::text FROM \(schema.resources) ORDER BY position")
                for try await row in try await connection.guardedQuery(resources, logger: logger).decode((String, String?, String?, String).self) { members.append(row) }
                for (name, table, value, deletedID) in members {
                    if let deletedID = Int(deletedID), deletedID > 0 { book.deletedIDs[name] = deletedID }
                    guard let table else {
                        if let value { root[name] = try JSONValue(parsing: Array(value.utf8)) }
                        continue
                    }
                    var items: [JSONValue] = []
                    let select = PostgresQuery(unsafeSQL: "SELECT version, record::text, created_with FROM \(schema.table(table)) ORDER BY row_id")
                    for try await (version, text, createdWith) in try await connection.guardedQuery(select, logger: logger).decode((Int64, String, String?).self) {
                        let record = try JSONValue(parsing: Array(text.utf8))
                        items.append(record)
                        if let id = recordID(of: record) {
                            book.versions[name, default: [:]][ExactText(id)] = Bookkeeping.Stamp(version: Int(version), record: record, createdWith: createdWith)
                        }
                    }
                    root[name] = .array(items)
                }
                // Departures too: the JSON file keeps them as this does.
                let stones = PostgresQuery(unsafeSQL: "SELECT sequence, collection, id::text, extract(epoch FROM at)::bigint, owner, fields::text, departed FROM \(schema.tombstones) ORDER BY sequence")
                for try await (sequence, collection, id, at, owner, fields, departed) in try await connection.guardedQuery(stones, logger: logger).decode(
                    (Int64, String, String, Int64, String?, String?, Bool).self)
                {
                    book.tombstones.append(Bookkeeping.Tombstone(
                        collection: collection, id: try JSONValue(parsing: Array(id.utf8)), sequence: Int(sequence), at: Int(at), owner: owner,
                        fields: try fields.map { try JSONValue(parsing: Array($0.utf8)) }?.objectValue, departed: departed))
                }
                let accounts = PostgresQuery(unsafeSQL: "SELECT email, user_id, password_hash, role, generation FROM \(schema.accounts) ORDER BY email")
                for try await (email, userID, hash, role, generation) in try await connection.guardedQuery(accounts, logger: logger).decode((String, String, String, String?, Int64).self) {
                    book.setAccount(StoredAccount(userID: userID, passwordHash: hash, role: role, generation: Int(generation)), email: email)
                }
                let keys = PostgresQuery(unsafeSQL: "SELECT key, collection, request::text, response::text, status, version, extract(epoch FROM at)::bigint FROM \(schema.idempotencyKeys) ORDER BY at")
                for try await (key, collection, request, response, status, version, at) in try await connection.guardedQuery(keys, logger: logger).decode((String, String, String, String, Int?, Int?, Int64).self) {
                    var record: JSONValue = [
                        "collection": .string(collection), "request": try JSONValue(parsing: Array(request.utf8)),
                        "response": try JSONValue(parsing: Array(response.utf8)), "at": .number(JSONNumber(at)),
                    ]
                    if let status { record["status"] = .number(JSONNumber(status)) }
                    if let version { record["version"] = .number(JSONNumber(version)) }
                    book.idempotency[key] = record
                }
                root[Bookkeeping.member] = book.saved
                return .object(root)
            }
        } catch {
            throw serverError(error)
        }
    }
}

/// The row-level security of a schema's collection tables, read before an import replaces them,
/// so that the new tables have it from the import's commit: servers running under access rules
/// keep their second layer (``PostgresBackend/installRowSecurity(_:schema:tables:client:logger:)``).
/// A collection that had policies gets the same; a new one gets policies that admit only the
/// server's own work and admins (as a collection the rules do not name) until a server starts
/// with rules and installs its own.
struct SavedRowSecurity: Sendable {
    struct Policy: Sendable {
        var name: String
        var command: String
        var using: String?
        var check: String?
    }

    var policies: [String: [Policy]]
    /// The roles the tables were granted to (a `?role=`), besides their owner.
    var grantees: [String]
    /// The generated columns that sharing rules read (``SharedRowsSQL``), by collection: the
    /// membership functions read them, and the new tables have them from the commit on too.
    var columns: [String: [(name: String, expression: String)]] = [:]
    /// Each collection's table before the import. A sharing rule's policies and membership
    /// functions name other collections' tables: should the import give a collection another
    /// table, they would read the wrong one, so they are closed instead until a server starts.
    var tablesBefore: [String: String] = [:]

    /// Nil when no collection table of the schema has row-level security.
    static func read(_ schema: PostgresSchema, _ connection: PostgresConnection, _ logger: Logger) async throws -> SavedRowSecurity? {
        var select = BoundSQL("SELECT r.name, p.policyname::text, p.cmd, p.qual, p.with_check FROM pg_policies AS p JOIN \(schema.resources) AS r ON r.table_name = p.tablename::text WHERE p.schemaname::text = ")
        select.append(select.bind(schema.name) + " AND p.policyname LIKE 'modelsync\\_%'")
        var policies: [String: [Policy]] = [:]
        for try await (collection, name, command, using, check) in try await connection.guardedQuery(select.query, logger: logger).decode((String, String, String, String?, String?).self) {
            policies[collection, default: []].append(Policy(name: name, command: command, using: using, check: check))
        }
        guard !policies.isEmpty else { return nil }
        var grants = BoundSQL("SELECT DISTINCT g.grantee::text FROM information_schema.role_table_grants AS g JOIN \(schema.resources) AS r ON r.table_name = g.table_name::text ")
        grants.append("WHERE g.table_schema::text = \(grants.bind(schema.name)) AND g.grantee::text NOT IN ('PUBLIC', current_user::text) ORDER BY 1")
        var grantees: [String] = []
        for try await grantee in try await connection.guardedQuery(grants.query, logger: logger).decode(String.self) { grantees.append(grantee) }
        var saved = SavedRowSecurity(policies: policies, grantees: grantees)
        let named = PostgresQuery(unsafeSQL: "SELECT name, table_name FROM \(schema.resources) WHERE table_name IS NOT NULL")
        for try await (name, table) in try await connection.guardedQuery(named, logger: logger).decode((String, String).self) { saved.tablesBefore[name] = table }
        var generated = BoundSQL("SELECT r.name, a.attname::text, pg_get_expr(d.adbin, d.adrelid) FROM \(schema.resources) AS r ")
        generated.append("JOIN pg_attribute AS a ON a.attrelid = to_regclass(\(generated.bind(schema.quoted + ".")) || quote_ident(r.table_name)) ")
        generated.append("JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum ")
        generated.append("WHERE a.attgenerated = 's' AND NOT a.attisdropped AND a.attname LIKE 'modelsync\\_field\\_%' ORDER BY 1, 2")
        for try await (collection, name, expression) in try await connection.guardedQuery(generated.query, logger: logger).decode((String, String, String).self) {
            saved.columns[collection, default: []].append((name, expression))
        }
        return saved
    }

    /// Gives the schema's collection tables (as loaded) the saved policies and grants.
    func restore(_ schema: PostgresSchema, _ connection: PostgresConnection, _ logger: Logger) async throws {
        var tables: [(String, String)] = []
        let query = PostgresQuery(unsafeSQL: "SELECT name, table_name FROM \(schema.resources) WHERE table_name IS NOT NULL ORDER BY name")
        for try await (name, table) in try await connection.guardedQuery(query, logger: logger).decode((String, String).self) { tables.append((name, table)) }
        let closed = PostgresBackend.policyCondition(nil, needed: .read, schema: schema)
        var statements: [String] = []
        let moved = tables.contains { name, table in tablesBefore[name].map { $0 != table } ?? false }
            || tablesBefore.keys.contains { name in !tables.contains { $0.0 == name } }
        if moved {
            // The membership functions read a table by name: gone until a server starts and makes them.
            statements.append("DO " + schema.literal("""
                DECLARE f regprocedure;
                BEGIN
                    FOR f IN SELECT p.oid::regprocedure FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
                        WHERE n.nspname = \(schema.literal(schema.name)) AND p.proname LIKE 'modelsync\\_members\\_%' LOOP
                        EXECUTE format('DROP FUNCTION %s', f);
                    END LOOP;
                END
                """))
        }
        /// Whether a policy reads other tables than its own (a sharing rule's).
        func readsOthers(_ policy: Policy) -> Bool {
            [policy.using, policy.check].contains { $0?.contains("modelsync_records_") == true || $0?.contains("modelsync_members_") == true }
        }
        // Every table's columns before any policy: a policy reads its parents' columns.
        for (collection, table) in tables {
            for column in columns[collection] ?? [] {
                let target = schema.table(table)
                statements.append("ALTER TABLE \(target) ADD COLUMN IF NOT EXISTS \(quotePostgres(column.name)) text GENERATED ALWAYS AS (\(column.expression)) STORED")
                statements.append(SharedRowsSQL.columnIndex(column.name, table: target, tableName: table))
            }
        }
        for (collection, table) in tables {
            let target = schema.table(table)
            statements.append("ALTER TABLE \(target) ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY")
            let kept = policies[collection].map { saved in moved && saved.contains(where: readsOthers) ? nil : saved } ?? nil
            let saved = kept ?? [
                Policy(name: "modelsync_read", command: "SELECT", using: closed), Policy(name: "modelsync_insert", command: "INSERT", check: closed),
                Policy(name: "modelsync_update", command: "UPDATE", using: closed, check: closed), Policy(name: "modelsync_delete", command: "DELETE", using: closed),
            ]
            for policy in saved {
                var statement = "CREATE POLICY \(quotePostgres(policy.name)) ON \(target) FOR \(policy.command)"
                if let using = policy.using { statement += " USING (\(using))" }
                if let check = policy.check { statement += " WITH CHECK (\(check))" }
                statements.append(statement)
            }
        }
        for grantee in grantees { statements += PostgresBackend.grants(to: grantee, schema: schema) }
        for statement in statements { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
    }
}
