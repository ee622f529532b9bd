import CSQLite
import ModelSyncCore

/// What SQLite does when a write breaks a `UNIQUE`, `NOT NULL`, `CHECK` or primary-key
/// constraint: the `OR …` of `INSERT OR IGNORE` / `UPDATE OR FAIL`.
///
/// ```swift
/// try db.write { try tag.insert($0, onConflict: .ignore) }      // false when the tag exists
/// try db.write { try user.update($0, onConflict: .replace) }    // the clashing row goes
/// ```
public enum SQLiteConflictAction: String, Sendable, CaseIterable {
    /// Ends the whole transaction with an error (`ROLLBACK`).
    case rollback = "ROLLBACK"
    /// Undoes the statement and fails (`ABORT`, SQLite's default).
    case abort = "ABORT"
    /// Fails, keeping what the statement changed before the failing row (`FAIL`).
    case fail = "FAIL"
    /// Skips the row that would break the constraint, without an error (`IGNORE`).
    case ignore = "IGNORE"
    /// Deletes the rows that clash on a unique key or the primary key, then writes (`REPLACE`).
    /// The deleted rows' foreign-key actions run (`ON DELETE CASCADE` removes their children),
    /// and so do their delete triggers (ModelSync's connections turn recursive triggers on).
    case replace = "REPLACE"
}

extension SQLTable {
    /// The SQL of an insert or update statement with `OR action` after its verb.
    func sql(_ statement: Statement, or action: SQLiteConflictAction) -> String {
        let sql = sql(statement)
        let verb = sql.hasPrefix("INSERT") ? "INSERT" : "UPDATE"
        return verb + " OR " + action.rawValue + sql.dropFirst(verb.count)
    }

    /// `INSERT [OR action] INTO … VALUES (…), (…), …` for `rows` rows of every column, row `r`
    /// binding field `i` to parameter `r × fields + i + 1`; with `returning`, the statement
    /// returns each inserted row.
    func multiRowInsertSQL(rows: Int, or action: SQLiteConflictAction?, returning: Bool) -> String {
        let row = "(" + Array(repeating: "?", count: schema.fields.count).joined(separator: ", ") + ")"
        return "INSERT" + (action.map { " OR " + $0.rawValue } ?? "") + " INTO \(quotedName) (\(columnList)) VALUES "
            + Array(repeating: row, count: rows).joined(separator: ", ") + (returning ? " RETURNING \(columnList)" : "")
    }

    /// ``multiRowInsertSQL(rows:or:returning:)`` with the model's upsert clause: `… ON CONFLICT
    /// (<primary key>) DO UPDATE SET` every other column (`DO NOTHING` when there is none).
    /// SQLite writes the rows of `VALUES` in order, so a key given twice ends with the later row.
    func multiRowUpsertSQL(rows: Int) -> String {
        let fields = schema.fields
        let column = { (index: Int) in quoteIdentifier(fields[index].column) }
        let nonKey = fields.indices.filter { !primaryKey.contains($0) }
        let action = nonKey.isEmpty ? "NOTHING" : "UPDATE SET " + nonKey.map { "\(column($0)) = excluded.\(column($0))" }.joined(separator: ", ")
        return multiRowInsertSQL(rows: rows, or: nil, returning: false)
            + " ON CONFLICT (\(primaryKey.map(column).joined(separator: ", "))) DO \(action)"
    }

    /// `INSERT … ON CONFLICT (target) DO UPDATE SET … RETURNING <columns>`: the fields at
    /// `updated` take the new values when a row with the same `target` columns exists. The
    /// model's insert, so a nil rowid key is bound NULL and SQLite assigns it.
    func upsertSQL(target: [Int], updated: [Int]) -> String {
        let fields = schema.fields
        let column = { (index: Int) in quoteIdentifier(fields[index].column) }
        // An empty SET is not SQL; assigning the key to itself still returns the row.
        let assignments = (updated.isEmpty ? [target[0]] : updated).map { "\(column($0)) = excluded.\(column($0))" }
        return sql(.insert)
            + " ON CONFLICT (\(target.map(column).joined(separator: ", "))) DO UPDATE SET \(assignments.joined(separator: ", ")) "
            + "RETURNING \(columnList)"
    }
}

extension SQLModel {
    /// Inserts the model with `INSERT OR <action>`: `.ignore` skips a row that breaks a
    /// constraint, `.replace` deletes the rows it clashes with first. Returns whether the row
    /// was written (false only for a skipped row, which leaves the model as it was); an
    /// assigned id flows back as with ``insert(_:validate:)-(SQLiteConnection,_)``.
    @discardableResult
    public mutating func insert(_ db: SQLiteConnection, onConflict action: SQLiteConflictAction, validate: Bool = true) throws -> Bool {
        try insertRow(db, or: action, validate: validate)
    }

    /// Updates every column of the model's row with `UPDATE OR <action>`. Returns whether the
    /// row was written (false when `.ignore` skipped it); throws
    /// ``SQLiteError/Kind-swift.enum/rowNotFound(table:)`` when there is no such row.
    @discardableResult
    public func update(_ db: SQLiteConnection, onConflict action: SQLiteConflictAction, validate: Bool = true) throws -> Bool {
        try updateRow(db, or: action, validate: validate)
    }

    /// ``save(_:validate:)-(SQLiteConnection,_)`` with `OR <action>` on its update and insert: `.replace` makes the
    /// model's values win over rows that hold its unique keys (they are deleted), `.ignore`
    /// skips a model that clashes. Returns whether the row was written.
    @discardableResult
    public mutating func save(_ db: SQLiteConnection, onConflict action: SQLiteConflictAction, validate: Bool = true) throws -> Bool {
        try saveRow(db, or: action, validate: validate)
    }

    /// Inserts the model, or updates the row with the same primary key, as ``upsert(_:validate:)``,
    /// with `action` deciding what happens when the model clashes with another row on a
    /// unique key: `.replace` deletes that row (the model's own row is updated in place, so its
    /// children stay), `.ignore` skips the model. Runs `UPDATE OR <action>` and, when no row
    /// has the key, `INSERT OR <action>`. Returns whether the row was written. Like
    /// ``upsert(_:validate:)``, it stores the values as given.
    @discardableResult
    public func upsert(_ db: SQLiteConnection, onConflict action: SQLiteConflictAction, validate: Bool = true) throws -> Bool {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        _ = try Self.keyedTable()
        try run(.update, or: action, db)
        if db.changes > 0 { return true }
        try run(.insert, or: action, db)
        return db.changes > 0
    }

    /// Inserts the model, or updates the row that has the same values in the unique columns
    /// `uniqueKey` (`INSERT … ON CONFLICT (…) DO UPDATE … RETURNING …`: one statement), then
    /// takes the stored row: the model's primary key becomes the existing row's id when
    /// there was one, or the new id.
    ///
    /// `updating` lists the properties to overwrite on an existing row (default: every column
    /// but the primary key and `uniqueKey`). `uniqueKey` must be exactly the columns of a
    /// `UNIQUE` constraint or unique index (`@Column(unique: true)`, a `unique:` group), or
    /// SQLite refuses the statement. Validates first unless `validate` is false. The stored row
    /// comes back as the statement wrote it, without the changes of an `AFTER` trigger (see
    /// ``insertAll(_:_:onConflict:validate:)``).
    ///
    /// ```swift
    /// var user = User(email: "ada@example.com", name: "Ada")
    /// try db.write { try user.upsert($0, uniqueKey: [\.email]) }    // user.id: the row's id
    /// ```
    public mutating func upsert(
        _ db: SQLiteConnection, uniqueKey: [PartialKeyPath<Self>], updating: [PartialKeyPath<Self>]? = nil, validate: Bool = true
    ) throws {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        let table = Self.sqlTable
        let target = try uniqueKey.map(Self.fieldIndex)
        guard !target.isEmpty else { throw SQLiteError.misuse("upsert(uniqueKey:) needs the properties of a unique key") }
        let updated = try updating.map { try $0.map(Self.fieldIndex) }
            ?? table.schema.fields.indices.filter { !table.primaryKey.contains($0) && !target.contains($0) }
        let sql = table.upsertSQL(target: target, updated: updated)
        let stored = try db.withUnboundStatement(sql) { statement -> Self? in
            var encoder = SQLRowEncoder(statement: statement.handle, table: table)
            try bind(to: &encoder)
            guard try statement.step() else { return nil }
            let row = try Self.decodeRow(statement)
            try statement.run()
            return row
        }
        guard let stored else { throw Self.rowNotFound(sql) }
        self = stored
    }

    /// Inserts every model with multi-row `INSERT … VALUES (…), (…), …` statements (as many
    /// rows per statement as SQLite's limit on parameters allows), in one transaction: all
    /// are inserted or, on an error, none, whatever `action`. Returns how many rows were
    /// inserted.
    ///
    /// `action` is the statement's `OR` clause: `.ignore` skips the models that clash with a
    /// row (they keep a nil id), `.replace` deletes the rows they clash with. Ids SQLite
    /// assigns flow back into `models`, with the whole stored row (`RETURNING`), only on
    /// success. Under `.ignore`, a returned row is matched to its model by its stored values,
    /// in order. Unless `validate` is false, every model is validated before the transaction
    /// begins (the error's ``/ModelSyncCore/ValidationError/batchIndex`` says which failed).
    ///
    /// A returned row is the row as the statement wrote it: changes that an `AFTER INSERT`
    /// trigger makes to it are not in the model (``insert(_:validate:)-(SQLiteConnection,_)``
    /// reads its row back and has them); ``refresh(_:)`` reads them.
    @discardableResult
    public static func insertAll(
        _ models: inout [Self], _ db: SQLiteConnection, onConflict action: SQLiteConflictAction? = nil, validate: Bool = true
    ) throws -> Int {
        if validate { try validateAll(models) }
        guard !models.isEmpty else { return 0 }
        try prepareTableOnce(db)
        let rowsPerStatement = max(1, db.parameterLimit / max(1, schema.fields.count))
        var stored = models
        let written = try db.transaction {
            for index in stored.indices {
                stored[index].stampForWrite(inserting: true, db)
                try stored[index].willInsert(db)
            }
            var start = 0
            var written: [Bool] = []
            for count in statementSizes(stored.count, maximum: rowsPerStatement) {
                written += try insertRows(&stored[start..<(start + count)], db, or: action)
                start += count
            }
            for (model, inserted) in zip(stored, written) where inserted { try model.didInsert(db) }
            return written
        }
        models = stored
        return written.count { $0 }
    }

    /// ``upsert(_:validate:)-(SQLiteConnection,_)`` of each model in turn, without validating,
    /// by multi-row statements (`INSERT … VALUES (…), (…), … ON CONFLICT (<key>) DO UPDATE …`,
    /// at most 256 rows each): for writes of many rows at once, where a statement per row costs
    /// more than the rows (a sync pull's page). A key given twice ends with the later model's
    /// values. Assigned ids do not flow back; no hooks run, as with `upsert`. Call it inside a
    /// transaction: a failing statement undoes only itself.
    package static func upsertAll(_ models: [Self], _ db: SQLiteConnection) throws {
        guard !models.isEmpty else { return }
        try prepareTableOnce(db)
        let table = try keyedTable()
        // Small enough that compiling a statement shape once costs little; large enough that
        // the per-statement work is spread over many rows.
        let rowsPerStatement = max(1, min(256, db.parameterLimit / max(1, schema.fields.count)))
        var start = 0
        for count in statementSizes(models.count, maximum: rowsPerStatement) {
            try db.withUnboundUpsert(rows: count, of: table) { statement in
                for row in 0..<count {
                    var encoder = SQLRowEncoder(statement: statement.handle, table: table, row: row)
                    try models[start + row].bind(to: &encoder)
                }
                try statement.run()
            }
            start += count
        }
    }

    /// Validates every model, the first invalid one's error carrying its position.
    static func validateAll(_ models: [Self]) throws {
        for index in models.indices {
            do {
                _ = try models[index].validated()
            } catch {
                var indexed = error
                indexed.batchIndex = index
                throw indexed
            }
        }
    }

    /// One multi-row insert of `models`; returns which of them were inserted.
    private static func insertRows(_ models: inout ArraySlice<Self>, _ db: SQLiteConnection, or action: SQLiteConflictAction?) throws -> [Bool] {
        let table = sqlTable
        let ignoring = action == .ignore
        // The inserted rows come back when ids are to flow back, or to tell which were skipped.
        let returning = try ignoring || models.contains { try $0.rowIDKeyIsNil() }
        let sql = table.multiRowInsertSQL(rows: models.count, or: action, returning: returning)
        var rows: [(model: Self, values: [SQLValue])] = []
        try db.withUnboundStatement(sql) { statement in
            for (row, model) in models.enumerated() {
                var encoder = SQLRowEncoder(statement: statement.handle, table: table, row: row)
                try model.bind(to: &encoder)
            }
            while try statement.step() {
                rows.append((try decodeRow(statement), ignoring ? statement.row() : []))
            }
        }
        guard returning else { return Array(repeating: true, count: models.count) }
        guard ignoring else {
            // SQLite inserts the rows of `VALUES` in order and returns them in that order.
            guard rows.count == models.count else {
                throw SQLiteError.misuse("\(rows.count) rows came back from inserting \(models.count)", sql: sql)
            }
            for (index, row) in zip(models.indices, rows) { models[index] = row.model }
            return Array(repeating: true, count: models.count)
        }
        // Skipped models are missing from the returned rows: match each row to the next model
        // whose values it holds (a nil rowid key aside).
        let key = table.rowIDKeyMayBeNil ? table.primaryKey.first : nil
        var written = Array(repeating: false, count: models.count)
        var position = 0
        for row in rows {
            while position < models.count {
                let index = models.startIndex + position
                let sent = try models[index].storedValues()
                position += 1
                if sent.indices.allSatisfy({ ($0 == key && sent[$0] == .null) || sent[$0] == row.values[$0] }) {
                    models[index] = row.model
                    written[position - 1] = true
                    break
                }
            }
        }
        return written
    }

    /// The value of every field as it is stored.
    func storedValues() throws -> [SQLValue] {
        try Self.schema.fields.indices.map(fieldValue)
    }
}

/// The number of rows of each multi-row statement for `total` rows: full statements of
/// `maximum`, then powers of two, so that a few statement shapes serve every count and the
/// statement cache keeps them.
func statementSizes(_ total: Int, maximum: Int) -> [Int] {
    var sizes = Array(repeating: maximum, count: total / maximum)
    var rest = total % maximum
    while rest > 0 {
        let size = 1 << (Int.bitWidth - 1 - rest.leadingZeroBitCount)
        sizes.append(size)
        rest -= size
    }
    return sizes
}
