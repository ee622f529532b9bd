import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

/// The data in PostgreSQL (see ``PostgresSchema`` for the tables): list queries become SQL over
/// `jsonb` with every value bound, `If-Match` is a compare in the write's transaction, and
/// `LISTEN`/`NOTIFY` carries every server's writes to every server's change streams.
final class PostgresBackend: ServerBackend {
    /// A top-level name of the data: collections have a table (its quoted, schema-qualified
    /// name, built once: every query names it).
    struct Resource: Sendable {
        var kind: ResourceKind
        var table: String?
        /// The table's own name, as ``PostgresSchema/allRecords`` names it.
        var tableName: String?
    }

    let schema: PostgresSchema
    let client: PostgresClient
    let logger: Logger
    let feedLimits: FeedLimits
    /// The top-level names, read when the server starts (the data's shape changes only by import).
    let resources: [String: Resource]
    /// The data `reset()` puts back: what the server was started with, when it was.
    let initialData: JSONValue?
    let relay: ChangeRelay
    /// Access rules and how row-level security holds them (nil: no rules, no policies).
    let rowSecurity: RowSecurity?
    /// The rules' row filters as SQL over the collection tables.
    let shared: SharedRowsSQL
    /// Single writes that arrive together commit together.
    let groupCommit = GroupCommit()
    /// How many times a group met another server's write and started again (for tests).
    let groupsMoved = Locked(0)
    /// How many groups were written in one statement without reading first (for tests).
    let groupsWrittenUnread = Locked(0)
    private let running: Task<Void, Never>
    private let listening: Task<Void, Never>

    /// Connects, optionally replaces the data with `initialData`, and reads the data's shape.
    static func open(
        _ database: ServerDatabase, initialData: JSONValue?, feedLimits: FeedLimits, rules: AccessRules? = nil, logger: Logger
    ) async throws -> PostgresBackend {
        let schema = PostgresSchema(name: database.schema)
        let security = rules.map { RowSecurity(rules: $0, role: database.role) }
        // The setup on connections of its own without the statement timeout: it waits for the
        // import lock behind other servers' setups, and an import is one long transaction.
        var setup = database
        (setup.statementTimeout, setup.minimumConnections) = (nil, 0)
        let (setupClient, setupRunning) = try await PostgresClient.running(setup, logger: logger)
        let prepared: (resources: [String: Resource], sequence: Int64)
        do {
            if let security { try await Self.checkRowSecurityRole(security, client: setupClient, logger: logger) }
            if let initialData { try await Self.importData(initialData, schema: schema, client: setupClient, replacing: true, logger: logger) }
            let resources = try await Self.readResources(schema, setupClient, logger)
            // The accounts' tables first: the role requests take is granted every table there is.
            try await Self.addRefreshTokenTable(schema, setupClient, logger)
            try await Self.upgradeAccounts(schema, setupClient, logger)
            try await Self.installRowSecurity(security, schema: schema, tables: Self.collectionTables(resources), client: setupClient, logger: logger)
            // Where the change streams start: read before the server takes requests, so that every
            // change a stream's backlog may miss is later than this.
            let sequence: Int64 = try await setupClient.guardedRows(
                PostgresQuery(unsafeSQL: "SELECT sequence FROM \(schema.state)"), as: Int64.self, logger: logger).first ?? 0
            prepared = (resources, sequence)
        } catch {
            setupRunning.cancel()
            await setupRunning.value
            throw Self.serverError(error)
        }
        setupRunning.cancel()
        await setupRunning.value
        let (client, running) = try await PostgresClient.running(database, logger: logger)
        return PostgresBackend(
            schema: schema, client: client, logger: logger, feedLimits: feedLimits, resources: prepared.resources,
            initialData: initialData, rowSecurity: security, running: running, streamsStart: Int(prepared.sequence))
    }

    private init(
        schema: PostgresSchema, client: PostgresClient, logger: Logger, feedLimits: FeedLimits, resources: [String: Resource],
        initialData: JSONValue?, rowSecurity: RowSecurity?, running: Task<Void, Never>, streamsStart: Int
    ) {
        self.rowSecurity = rowSecurity
        shared = SharedRowsSQL(schema: schema, tables: Self.collectionTables(resources), rules: rowSecurity?.rules)
        self.schema = schema
        self.client = client
        self.logger = logger
        self.feedLimits = feedLimits
        self.resources = resources
        self.initialData = initialData
        self.running = running
        let relay = ChangeRelay(delivered: streamsStart)
        self.relay = relay
        listening = Task { [schema, resources, client, logger] in await Self.listen(schema, resources, client, relay, security: rowSecurity, logger) }
    }

    /// The collections' table names (unquoted), by collection.
    static func collectionTables(_ resources: [String: Resource]) -> [String: String] {
        resources.compactMapValues { $0.kind == .collection ? $0.tableName : nil }
    }

    private static func readResources(_ schema: PostgresSchema, _ client: PostgresClient, _ logger: Logger) async throws -> [String: Resource] {
        guard try await client.guardedRows(schema.holdsData, as: String?.self, logger: logger).first ?? nil != nil
        else {
            throw ServerError.database("the schema \(schema.name) holds no modelsync-server data; import some first (modelsync-server import)")
        }
        var resources: [String: Resource] = [:]
        let rows = try await client.guardedRows(
            PostgresQuery(unsafeSQL: "SELECT name, kind, table_name FROM \(schema.resources)"), as: (String, String, String?).self, logger: logger)
        for (name, kind, table) in rows {
            switch kind {
            case "collection": resources[name] = Resource(kind: .collection, table: table.map(schema.table), tableName: table)
            case "singular": resources[name] = Resource(kind: .singular, table: nil, tableName: nil)
            default: continue
            }
        }
        try await addWhatIsMissing(schema, tables: resources.values.compactMap(\.tableName), client, logger)
        return resources
    }

    /// Data imported by an earlier version gets what this one added: ``PostgresSchema/allRecords``,
    /// ``PostgresSchema/columnUpgrades``, ``PostgresSchema/highestIDFunction`` and the
    /// collections' write functions (also made again when they notify another channel than
    /// ``PostgresSchema/channel`` or lack ``PostgresSchema/currentFunctionMarker``).
    private static func addWhatIsMissing(_ schema: PostgresSchema, tables: [String], _ client: PostgresClient, _ logger: Logger) async throws {
        let tables = tables.sorted()
        var exists = BoundSQL("SELECT to_regclass(")
        exists.append(exists.bind(schema.allRecords) + ") IS NOT NULL, to_regprocedure(")
        exists.append(exists.bind(schema.highestIDFunction + "(regclass, integer, bigint)") + ") IS NOT NULL AND coalesce(strpos(")
        exists.append("(SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(\(exists.bind(schema.highestIDFunction + "(regclass, integer, bigint)")))), ")
        exists.append(exists.bind(PostgresSchema.currentFunctionMarker) + ") > 0, false), ")
        exists.append("(SELECT coalesce(bool_and(coalesce(strpos((SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(signature)), ")
        exists.append(exists.bind(schema.notifyCall) + ") > 0 AND strpos((SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(signature)), ")
        exists.append(exists.bind(PostgresSchema.currentFunctionMarker) + ") > 0, false)), true) FROM unnest(")
        exists.append(exists.bind(tables.map(schema.writeFunctionSignature)) + "::text[]) AS signature), ")
        // Made by this version with the accounts table and the tombstones' owner columns.
        exists.append("to_regprocedure(\(exists.bind(schema.idTakenFunction + "(regclass, text)"))) IS NOT NULL, ")
        // The tombstones' shared fields (sharing rules).
        exists.append("EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(\(exists.bind(schema.tombstones))) AND attname = 'fields' AND NOT attisdropped)")
        guard let (view, function, writeFunctions, idTaken, fields) = try await client.guardedRows(
            exists.query, as: (Bool, Bool, Bool, Bool, Bool).self, logger: logger).first,
              !view || !function || !writeFunctions || !idTaken || !fields
        else { return }
        try await client.guardedTransaction(logger: logger) { connection in
            // The import's lock: no import changes the tables meanwhile.
            try await connection.guardedRun(schema.changeLock, logger: logger)
            let statements = schema.columnUpgrades(tables)
                + [schema.allRecordsView(over: tables), "DROP FUNCTION IF EXISTS \(schema.highestIDFunction)(regclass, integer, bigint)", schema.highestIDCreation]
                + tables.map(schema.writeFunctionCreation)
            for statement in statements { try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger) }
        }
    }

    /// A PostgreSQL error as the server reports it.
    static func serverError(_ error: any Error) -> any Error {
        if error is ServerError || error is APIError { return error }
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            // Class 22, a data exception (an invalid regular expression, a NUL byte in a query
            // value): the request's fault.
            if error.serverInfo?[.sqlState]?.hasPrefix("22") == true { return APIError.badRequest(message) }
            if error.serverInfo?[.sqlState] == queryCanceledState { return statementTimedOut }
            return ServerError.database(message)
        }
        return ServerError.database("\(error)")
    }

    /// `query_canceled`: a statement ran past `statement_timeout` (``ServerDatabase/statementTimeout``).
    static let queryCanceledState = "57014"

    /// What a request answers when one of its statements ran past the statement timeout: a 503
    /// (its transaction rolled back, nothing of it is saved), to try again later or narrower.
    static var statementTimedOut: APIError {
        var error = APIError(
            status: .serviceUnavailable, message: "the database took longer than its statement timeout; nothing was changed",
            details: ["reason": "statement_timeout"])
        error.headers[.retryAfter] = "1"
        return error
    }

    /// What a write answers when the connection failed once its commit was sent: PostgreSQL may
    /// have saved it or not, so it is never applied again (that could apply it twice).
    static let commitOutcomeUnknown = ServerError.database(
        "the connection to PostgreSQL failed while committing: the write may or may not be saved")

    /// What a statement answers when its connection has closed (see `guardedQuery`).
    static let connectionClosed = ServerError.database("the connection to PostgreSQL closed")

    /// Whether `error` came without PostgreSQL's answer (a lost connection, a stall) rather than
    /// as its refusal.
    static func isUnanswered(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == nil
    }

    // MARK: Reads

    func resource(named name: String) -> ResourceKind? {
        resources[name]?.kind
    }

    func resourceKinds() -> [String: ResourceKind] {
        resources.mapValues(\.kind)
    }

    /// The table of a collection; 404 when there is no such collection.
    func table(of collection: String) throws -> String {
        guard let table = resources[collection]?.table else { throw APIError.notFound("no collection named \(collection)") }
        return table
    }

    /// Runs `body` in a read-only transaction that sees one snapshot.
    func reading<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            // One round trip to begin (postgres-nio's `withTransaction` takes two with the SET).
            return try await client.guardedTransaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger) { try await body($0) }
        } catch let error as ServerError where error == Self.commitOutcomeUnknown {
            // A read-only transaction saves nothing: an unanswered COMMIT only lost the connection.
            throw Self.connectionClosed
        } catch {
            throw Self.serverError(error)
        }
    }

    /// Runs `body` as `reading` does, its statements made as `caller` for row-level security
    /// (under access rules; without, as `reading`).
    func reading<T: Sendable>(as caller: Caller, system: Bool = false, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        guard rowSecurity != nil else { return try await reading(body) }
        let identity = identityStatement(caller, system: system)
        return try await reading { connection in
            try await connection.guardedRun(identity, logger: logger)
            return try await body(connection)
        }
    }

    /// Runs one statement's worth of reading outside a transaction: a single statement sees
    /// one snapshot by itself. Under access rules, in a transaction that names the caller
    /// first (one more round trip than without rules).
    func readingOnce<T: Sendable>(as caller: Caller = .anonymous, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        if rowSecurity != nil { return try await reading(as: caller, body) }
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch {
            throw Self.serverError(error)
        }
    }

    func modified(_ connection: PostgresConnection) async throws -> Date {
        try await connection.guardedFirst(PostgresQuery(unsafeSQL: "SELECT modified FROM \(schema.state)"), as: Date.self, logger: logger) ?? Date(timeIntervalSince1970: 0)
    }

    func list(_ collection: String, _ request: ListRequest) async throws -> ListPage {
        let table = try table(of: collection)
        let ownerTable = try request.owner.map { try self.table(of: $0.collection) }
        let visibility = request.visibility
        let rows = visibility.rows(of: collection)
        if request.owner == nil, request.embeds.isEmpty, request.expands.isEmpty,
           Self.slicingParameters.allSatisfy({ request.parameters.values($0).isEmpty })
        {
            return try await readingOnce(as: visibility.caller) { connection in try await wholeList(table, collection, request, rows, connection) }
        }
        return try await reading(as: visibility.caller) { connection in
            var query = request.query
            if let owner = request.owner, let ownerTable {
                var check = BoundSQL("SELECT 1 FROM \(ownerTable) WHERE id_text = ")
                check.append(check.bind(owner.id))
                check.append(" AND " + rowCondition(visibility.viewableRows(of: owner.collection), &check, of: owner.collection))
                guard try await connection.guardedFirst(check.query, as: Int32.self, logger: logger) != nil else { throw APIError.missing(owner.collection, owner.id) }
                query.require(foreignKey(of: owner.collection), equals: owner.id)
            }
            var counting = BoundSQL("SELECT count(*), (SELECT modified FROM \(schema.state)) FROM \(table) WHERE ")
            counting.append(condition(query, &counting) + " AND " + rowCondition(rows, &counting, of: collection))
            let counted = try await connection.guardedFirst(counting.query, as: (Int64, Date).self, logger: logger)
            let total = Int(counted?.0 ?? 0)
            let slice = try request.slice(count: total)
            var selecting = BoundSQL("SELECT record::text FROM \(table) WHERE ")
            selecting.append(condition(query, &selecting) + " AND " + rowCondition(rows, &selecting, of: collection))
            selecting.append(" ORDER BY " + ordering(query, &selecting))
            selecting.append(" LIMIT \(selecting.bind(slice.range.count)) OFFSET \(selecting.bind(slice.range.lowerBound))")
            let items = try await records(connection, selecting.query)
            let page = try await embed(items, of: collection, embeds: request.embeds, expands: request.expands, visibility, connection)
            return ListPage(items: page, total: total, slice: slice, modified: counted?.1 ?? Date(timeIntervalSince1970: 0))
        }
    }

    static let slicingParameters = ["_page", "_start", "_end", "_limit"]

    /// The read of one record by id: the most frequent statement, prepared once per connection
    /// (parsing and planning it took half of PostgreSQL's time per read).
    struct RecordByID: PostgresPreparedStatement {
        static let name = "modelsync_record_by_id"
        static let sql = """
            SELECT version, record::text, (SELECT modified FROM modelsync_state) FROM modelsync_all_records
            WHERE table_name = $1 AND id_text = $2
            """
        typealias Row = (Int64, String, Date)
        var table: String
        var id: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(table)
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Every matching record, in one statement: a list read without paging, nesting, embeds or
    /// expands (the common filter query) needs no count and no transaction.
    private func wholeList(_ table: String, _ collection: String, _ request: ListRequest, _ rows: RowFilter, _ connection: PostgresConnection) async throws -> ListPage {
        var selecting = BoundSQL("SELECT record::text, (SELECT modified FROM \(schema.state)) FROM \(table) WHERE ")
        selecting.append(condition(request.query, &selecting) + " AND " + rowCondition(rows, &selecting, of: collection))
        selecting.append(" ORDER BY " + ordering(request.query, &selecting))
        var items: [JSONValue] = []
        var modified: Date?
        for try await (text, changed) in try await connection.guardedQuery(selecting.query, logger: logger).decode((String, Date).self) {
            items.append(try JSONValue(parsing: Array(text.utf8)))
            modified = changed
        }
        let slice = try request.slice(count: items.count)
        // No row, no date: one more statement (the data may have changed in between, which only
        // moves `Last-Modified`).
        let lastModified: Date
        if let modified { lastModified = modified } else { lastModified = try await self.modified(connection) }
        return ListPage(items: items, total: items.count, slice: slice, modified: lastModified)
    }

    func item(_ collection: String, id: String, embeds: [String], expands: [String], visibility: Visibility) async throws -> ItemRead {
        guard let table = resources[collection]?.tableName else { throw APIError.notFound("no collection named \(collection)") }
        func read(_ connection: PostgresConnection) async throws -> ItemRead {
            var found: (Int64, String, Date)?
            if visibility.isOpen && rowSecurity == nil {
                for row in try await connection.guardedExecute(RecordByID(table: table, id: id), logger: logger) { found = row }
            } else {
                // Not through the view (it reads as its owner): the table, and the caller's rows only.
                var select = BoundSQL("SELECT version, record::text, (SELECT modified FROM \(schema.state)) FROM \(schema.table(table)) WHERE id_text = ")
                select.append(select.bind(id) + " AND " + rowCondition(visibility.viewableRows(of: collection), &select, of: collection))
                found = try await connection.guardedFirst(select.query, as: (Int64, String, Date).self, logger: logger)
            }
            // A row the reader may not see is missing to it: its existence is not revealed.
            guard let (version, text, modified) = found else { throw APIError.missing(collection, id) }
            let value = try await embed([try JSONValue(parsing: Array(text.utf8))], of: collection, embeds: embeds, expands: expands, visibility, connection)[0]
            return ItemRead(value: value, version: Int(version), modified: modified)
        }
        // Without embeds or expands the read is one statement, and needs no transaction. Open
        // visibility under rules is the server's own work (`/_access/check` reading a parent):
        // every row, through the table (the requests' role may not read the view).
        if visibility.isOpen && rowSecurity != nil { return try await reading(as: .anonymous, system: true, read) }
        return try await embeds.isEmpty && expands.isEmpty ? readingOnce(as: visibility.caller, read) : reading(as: visibility.caller, read)
    }

    func singular(_ name: String) async throws -> (value: JSONValue, modified: Date)? {
        try await reading { connection in
            var select = BoundSQL("SELECT value::text FROM \(schema.resources) WHERE kind = 'singular' AND name = ")
            select.append(select.bind(name))
            guard let text = try await connection.guardedFirst(select.query, as: String.self, logger: logger) else { return nil }
            return (try JSONValue(parsing: Array(text.utf8)), try await modified(connection))
        }
    }

    func everything() async throws -> (value: JSONValue, modified: Date) {
        // Under access rules only an admin reaches `/db` (the route refuses the others).
        try await reading(as: Caller(userID: nil, role: Caller.adminRole)) { connection in
            (.object(try await everything(connection)), try await modified(connection))
        }
    }

    /// Every top-level member in the data's order.
    func everything(_ connection: PostgresConnection) async throws -> JSONObject {
        var root = JSONObject()
        let query = PostgresQuery(unsafeSQL: "SELECT name, table_name, value::text FROM \(schema.resources) ORDER BY position")
        var members: [(String, String?, String?)] = []
        for try await row in try await connection.guardedQuery(query, logger: logger).decode((String, String?, String?).self) { members.append(row) }
        for (name, table, value) in members {
            if let table {
                root[name] = .array(try await records(connection, PostgresQuery(unsafeSQL: "SELECT record::text FROM \(schema.table(table)) ORDER BY row_id")))
            } else if let value {
                root[name] = try JSONValue(parsing: Array(value.utf8))
            }
        }
        return root
    }

    // MARK: SQL of list queries

    /// The value at a dotted field path of `record`.
    private func field(_ path: String, _ sql: inout BoundSQL) -> String {
        "(record #> \(sql.bind(path.split(separator: ".").map(String.init)))::text[])"
    }

    /// The `WHERE` condition of a list query (json-server's rules, as ``ListQuery`` applies them
    /// in memory).
    func condition(_ query: ListQuery, _ sql: inout BoundSQL) -> String {
        var parts = ["true"]
        let text = schema.textFunction
        for (name, accepted) in query.equal {
            parts.append("\(text)\(field(name, &sql)) = ANY(\(sql.bind(accepted))::text[])")
        }
        for (name, comparison, value, pattern) in query.conditions {
            let target = field(name, &sql)
            if comparison == .like {
                // The pattern as parsed, written for PostgreSQL: both backends accept one language
                // (``LikePattern``), and nothing the request sent reaches the regex parser as is.
                parts.append(pattern.map { "\(text)(\(target)) ~* \(sql.bind($0.postgresPattern))" } ?? "false")
                continue
            }
            // Numbers compare as numbers when the query value is one too, anything else as text.
            let number = Double(value) != nil && value.allSatisfy({ "0123456789.eE+-".contains($0) }) ? value : nil
            let op = switch comparison {
            case .gte: ">="
            case .lte: "<="
            case .gt: ">"
            case .lt: "<"
            case .ne, .like: "="
            }
            let numberPlaceholder = number.map { sql.bind($0) + "::numeric" } ?? "NULL::numeric"
            let compared = """
                (CASE WHEN jsonb_typeof(\(target)) = 'number' AND \(numberPlaceholder) IS NOT NULL \
                THEN (\(target))::numeric \(op) \(numberPlaceholder) \
                ELSE \(text)(\(target)) COLLATE "C" \(op) \(sql.bind(value)) END)
                """
            parts.append("\(target) IS NOT NULL AND " + (comparison == .ne ? "NOT coalesce(\(compared), false)" : "coalesce(\(compared), false)"))
        }
        if let search = query.search {
            parts.append("""
                EXISTS (SELECT 1 FROM jsonb_path_query(record, 'strict $.**') AS found(value) \
                WHERE (jsonb_typeof(found.value) = 'string' AND strpos(lower(found.value #>> '{}'), \(sql.bind(search))) > 0) \
                OR (jsonb_typeof(found.value) = 'number' AND strpos(found.value::text, \(sql.bind(search))) > 0))
                """)
        }
        return parts.map { "(\($0))" }.joined(separator: " AND ")
    }

    /// The `ORDER BY` of a list query: missing values last (first when descending), numbers by
    /// value, the rest by text's bytes; ties keep the data's order.
    func ordering(_ query: ListQuery, _ sql: inout BoundSQL) -> String {
        var keys: [String] = []
        for (name, descending) in query.sort {
            let target = field(name, &sql)
            let direction = descending ? "DESC" : "ASC"
            keys.append("(\(target) IS NULL) \(direction)")
            keys.append("(CASE WHEN jsonb_typeof(\(target)) = 'number' THEN (\(target))::numeric END) \(direction)")
            // Text orders the values that are not numbers: numbers equal by value (`1`, `1.0`)
            // tie, and keep the data's order, as they do in the JSON file.
            keys.append("(CASE WHEN jsonb_typeof(\(target)) <> 'number' THEN \(schema.textFunction)(\(target)) END) COLLATE \"C\" \(direction)")
        }
        return (keys + ["row_id"]).joined(separator: ", ")
    }

    /// Adds `_embed` children (by `<singular>Id`) and `_expand` parents (from `<name>s`).
    private func embed(
        _ items: [JSONValue], of name: String, embeds: [String], expands: [String], _ visibility: Visibility, _ connection: PostgresConnection
    ) async throws -> [JSONValue] {
        guard !embeds.isEmpty || !expands.isEmpty else { return items }
        let ids = items.compactMap(recordID(of:))
        var children: [(key: String, byOwner: [ExactText: [JSONValue]])] = []
        for child in embeds {
            var select = BoundSQL()
            let key = select.bind(foreignKey(of: name))
            select.append("SELECT \(schema.textFunction)(record -> \(key)), record::text FROM \(try table(of: child)) WHERE \(schema.textFunction)(record -> \(key)) = ANY(\(select.bind(ids))::text[])")
            // Each relation shows the rows its own collection's rule admits.
            select.append(" AND " + rowCondition(visibility.rows(of: child), &select, of: child) + " ORDER BY row_id")
            var byOwner: [ExactText: [JSONValue]] = [:]
            for try await (owner, text) in try await connection.guardedQuery(select.query, logger: logger).decode((String, String).self) {
                byOwner[ExactText(owner), default: []].append(try JSONValue(parsing: Array(text.utf8)))
            }
            children.append((child, byOwner))
        }
        var parents: [(key: String, byID: [ExactText: JSONValue])] = []
        for parent in expands {
            let parentName = resources[parent + "s"]?.table != nil ? parent + "s" : parent
            guard let table = resources[parentName]?.table else { throw APIError.cannotExpand(parent) }
            let wanted = items.compactMap { $0[parent + "Id"].flatMap(scalarText) }
            var select = BoundSQL()
            select.append("SELECT id_text, record::text FROM \(table) WHERE id_text = ANY(\(select.bind(wanted))::text[])")
            select.append(" AND " + rowCondition(visibility.rows(of: parentName), &select, of: parentName))
            var byID: [ExactText: JSONValue] = [:]
            for try await (id, text) in try await connection.guardedQuery(select.query, logger: logger).decode((String, String).self) {
                byID[ExactText(id)] = try JSONValue(parsing: Array(text.utf8))
            }
            parents.append((parent, byID))
        }
        return attachRelations(items, children: children, parents: parents)
    }

    // MARK: Helpers

    /// The records a query selects as `record::text`, in order.
    func records(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> [JSONValue] {
        var records: [JSONValue] = []
        for try await text in try await connection.guardedQuery(query, logger: logger).decode(String.self) {
            records.append(try JSONValue(parsing: Array(text.utf8)))
        }
        return records
    }

    func close() async {
        await relay.finish()
        // The change stream first: stopping the pool under a catch-up query leaves it waiting.
        listening.cancel()
        await listening.value
        running.cancel()
        await running.value
    }
}
