import CSQLite
import ModelSyncCore

// Tables from models: create, drop, check, and the auto-create / auto-alter on first use.

extension SQLModel {
    /// Creates the model's table and its indexes.
    public static func createTable(_ db: SQLiteConnection, ifNotExists: Bool = false) throws {
        try createTable(db, sql: createTableSQL(ifNotExists: ifNotExists))
    }

    private static func createTable(_ db: SQLiteConnection, sql: String) throws {
        try checkIdentifiers()
        try checkTableNameIsOwn(db)
        let table = sqlTable
        try db.transaction {
            try db.execute(sql)
            for index in table.indexes { try db.execute(index.sql) }
        }
        db.preparedTables.insert(ObjectIdentifier(Self.self))
    }

    /// The `FOREIGN KEY` clauses of the model's relations, but those to a parent outside the
    /// schema: a model whose table neither exists nor is among those the ``Database`` prepares.
    /// SQLite would refuse every insert of the model for them ("no such table"), whereas
    /// without them the relation still loads, from a table made later.
    static func foreignKeyClausesWithinSchema(_ db: SQLiteConnection) throws -> [String] {
        try relations.compactMap { relation in
            guard let clause = try relation.foreignKeyClause() else { return nil }
            guard let parent = (relation as? any ReferencesTable)?.referencedTable,
                  parent.lowercased() != sqlTable.name.lowercased(),
                  !db.tablesBeingPrepared.contains(parent.lowercased())
            else { return clause }
            return try db.tableExists(parent) ? clause : nil
        }
    }

    /// Drops the model's table (and with it its indexes).
    public static func dropTable(_ db: SQLiteConnection, ifExists: Bool = true) throws {
        try db.execute("DROP TABLE \(ifExists ? "IF EXISTS " : "")\(quoteIdentifier(sqlTable.name))")
        db.preparedTables.remove(ObjectIdentifier(Self.self))
    }

    /// How the existing table differs from the model, one line per column: missing columns,
    /// columns the model does not have, and columns of another type. Empty when they match;
    /// a missing table is one line.
    public static func tableDifferences(_ db: SQLiteConnection) throws -> [String] {
        let table = sqlTable
        let existing = try db.columns(of: table.name)
        guard !existing.isEmpty else { return ["table '\(table.name)' does not exist"] }
        // Names by bytes: a column "e\u{301}" is not the column "é" to SQLite.
        let byName = Dictionary(existing.map { (ExactText($0.name), $0) }, uniquingKeysWith: { first, _ in first })
        var differences: [String] = []
        for (index, field) in schema.fields.enumerated() {
            guard let column = byName[ExactText(field.column)] else {
                differences.append("missing column '\(field.column)' (\(field.name): \(field.type))")
                continue
            }
            // A field stored through its transformer needs its representation's type.
            let type = table.columnType(index)
            if column.type.uppercased() != type.sqlType {
                let stored = type == field.type ? "" : " stored as \(type)"
                differences.append("column '\(field.column)' is \(column.type), \(field.name): \(field.type)\(stored) needs \(type.sqlType)")
            }
        }
        let columns = Set(schema.fields.map { ExactText($0.column) })
        for column in existing where !columns.contains(ExactText(column.name)) {
            differences.append("column '\(column.name)' is not a field of \(schema.name)")
        }
        return differences
    }

    /// Throws a ``SQLiteError/Kind/schemaMismatch(table:differences:)`` error, listing the
    /// differences, unless the table matches the model.
    public static func checkTable(_ db: SQLiteConnection) throws {
        let differences = try tableDifferences(db)
        guard differences.isEmpty else { throw mismatch(differences) }
    }

    /// Creates the table when it is missing (if the database creates tables; without the
    /// foreign keys to parents outside the schema, see ``foreignKeyClausesWithinSchema(_:)``), adds missing
    /// columns and indexes when the model ``autoAlters``, and otherwise checks that the table
    /// matches the model.
    static func prepareTable(_ db: SQLiteConnection) throws {
        try checkIdentifiers()
        try checkTableNameIsOwn(db)
        if try !db.tableExists(sqlTable.name) {
            guard db.configuration.createsTables else { return }
            try createTable(db, sql: sqlTable.createTableSQL(constraints: foreignKeyClausesWithinSchema(db)))
        } else if autoAlters {
            try alterTable(db)
        } else {
            try checkTable(db)
        }
        db.preparedTables.insert(ObjectIdentifier(Self.self))
    }

    /// ``prepareTable(_:)`` the first time the model is written on a connection.
    @inline(__always)
    static func prepareTableOnce(_ db: SQLiteConnection) throws {
        let type = ObjectIdentifier(Self.self)
        if db.lastPreparedTable == type { return }
        if !db.preparedTables.contains(type) { try prepareTable(db) }
        db.lastPreparedTable = type
    }

    /// Adds the columns and indexes the table lacks. Columns of another type, and columns
    /// SQLite cannot add (`NOT NULL` without a constant default, primary keys) are errors:
    /// they need a migration.
    static func alterTable(_ db: SQLiteConnection) throws {
        let table = sqlTable
        let existing = Set(try db.columns(of: table.name).map { ExactText($0.name) })
        var problems: [String] = []
        var additions: [String] = []
        for (index, field) in schema.fields.enumerated() where !existing.contains(ExactText(field.column)) {
            if field.isPrimaryKey {
                problems.append("missing primary-key column '\(field.column)' cannot be added")
            } else if !field.isOptional && table.defaultLiteral(index) == nil {
                problems.append("missing column '\(field.column)' is NOT NULL without a constant default")
            } else {
                additions += table.addColumnStatements(index)
            }
        }
        problems += try tableDifferences(db).filter { !$0.hasPrefix("missing column") && !$0.hasSuffix("is not a field of \(schema.name)") }
        guard problems.isEmpty else { throw mismatch(problems) }
        try db.transaction {
            for sql in additions + table.indexes.map(\.sql) { try db.execute(sql) }
        }
    }

    /// Throws ``SQLiteError/Kind/tableNameClash(table:types:)`` when another model type with
    /// a default table name, prepared on this connection, has the same table: `A.User` and
    /// `B.User` both default to `User`, and would read and overwrite each other's rows.
    /// Tables named in `@Model(table:)` may be shared on purpose and are not checked; nor are
    /// names that differ only by their bytes (`"é"`, `"e\u{301}"`), which are two tables.
    static func checkTableNameIsOwn(_ db: SQLiteConnection) throws {
        guard schema.table == schema.name else { return }
        let me = ObjectIdentifier(Self.self)
        let table = ExactText(schema.table)
        let name = String(reflecting: Self.self)
        let prepared = db.preparedTables
        let clash = defaultTableOwners.withLock { owners -> String? in
            owners[me] = (table, name)
            for other in prepared where other != me {
                if let owner = owners[other], owner.table == table { return owner.type }
            }
            return nil
        }
        guard let other = clash else { return }
        let types = [other, name]
        throw SQLiteError(
            .tableNameClash(table: schema.table, types: types), code: SQLITE_MISUSE,
            message: "\(types[0]) and \(types[1]) both default to the table '\(schema.table)'; name one with @Model(table:)")
    }

    /// Throws ``SQLiteError/Kind-swift.enum/invalidIdentifier(name:)`` when the table's name or
    /// a column's holds NUL: at open (or first use), rather than as SQLite's "unrecognized
    /// token" in every statement.
    static func checkIdentifiers() throws {
        try checkIdentifier(sqlTable.name)
        for field in schema.fields { try checkIdentifier(field.column) }
    }

    static func mismatch(_ differences: [String]) -> SQLiteError {
        SQLiteError(
            .schemaMismatch(table: sqlTable.name, differences: differences), code: SQLITE_SCHEMA,
            message: "table '\(sqlTable.name)' does not match \(schema.name): " + differences.joined(separator: "; "))
    }
}

/// The default table name and the full name of each model type prepared so far, to find two
/// types that share one (types live as long as the process, so this never goes stale).
private let defaultTableOwners = Locked<[ObjectIdentifier: (table: ExactText, type: String)]>([:])
