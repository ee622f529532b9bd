import ModelSyncCore

/// A model's table as SQL: its DDL and the statements ActiveRecord runs, built once per type
/// from the ``/ModelSyncCore/ModelSchema`` (see ``SQLModel/sqlTable``); a class, so that the row coders
/// hold it without copying its strings. Every identifier is quoted and every
/// value is a parameter: field `i` is parameter `?(i+1)`.
public final class SQLTable: Sendable {
    /// The model's schema.
    public let schema: ModelSchema
    /// The table name.
    public var name: String { schema.table }
    /// The primary-key fields, by index in the schema.
    public let primaryKey: [Int]
    /// Whether the primary key is one integer column: an alias of SQLite's rowid, assigned by
    /// SQLite when a row is inserted with it nil.
    public let hasRowIDKey: Bool
    /// Whether the rowid key is optional, so that an insert must check it for nil.
    let rowIDKeyMayBeNil: Bool
    /// The rowid key's field and key path, when the key is optional (-1 and nil otherwise): what
    /// that check reads.
    let optionalRowIDKey: Int
    let optionalRowIDKeyPath: (AnyKeyPath & Sendable)?

    /// `"a", "b", …`: every column in field order, as selected.
    let columnList: String
    let quotedName: String
    let keyCondition: String
    /// The SQL of each ``Statement``, by raw value.
    private let statements: [String]
    /// The field of each key path, for the query builder.
    let keyPaths: KeyPathIndex
    /// The column node of each field, and the select list, built once: a query made per call
    /// (`Post.where(\.id == key)`) copies them instead of allocating its own.
    let fieldColumns: [SQLNode]
    let selectedColumns: [SQLNode]
    /// What every query of the model selects, from where: shared by them all (see ``SelectHead``).
    let modelSelect: SelectHead
    /// `"deletedAt" IS NULL`, or a failure when there is no such field: the scope of a
    /// soft-deleting model's queries (``SQLModel/liveRowsScope``), built once.
    @usableFromInline let liveRowsCondition: SQLNode
    /// The column of each field stored through its transformer, with its transform, by index in
    /// the schema (nil for the fields stored as their own type); built once, and carried as is
    /// by the query builder's expressions.
    let transformedColumns: [TransformedColumn?]
    /// Whether any field is stored through its transformer.
    let hasTransforms: Bool
    /// Whether the model is a ``SoftDeletableModel``, which every query of it asks (see
    /// ``SQLModel/liveRowsScope``).
    @usableFromInline let softDeletable = TypeAnswerMemo()

    /// The statements ActiveRecord runs; connections cache them by kind, which is cheaper to
    /// look up than the SQL text.
    enum Statement: Int, CaseIterable {
        case insert
        case update
        case upsert
        case delete
        case selectByKey
        case selectByRowID
    }

    /// The SQL text of `statement`.
    func sql(_ statement: Statement) -> String { statements[statement.rawValue] }

    /// Builds the table description of `schema`; `transforms` are the fields whose columns hold
    /// their transformer's representation (`@Transform(…, inDatabase: true)`).
    public init(schema: ModelSchema, transforms: [SQLColumnTransform] = []) {
        self.schema = schema
        let fields = schema.fields
        var byField = [SQLColumnTransform?](repeating: nil, count: fields.count)
        for transform in transforms where byField.indices.contains(transform.field) {
            byField[transform.field] = transform
        }
        self.transformedColumns = fields.indices.map { index in
            byField[index].map { TransformedColumn(table: schema.table, column: fields[index].column, transform: $0) }
        }
        self.hasTransforms = byField.contains { $0 != nil }
        let primaryKey = fields.indices.filter { fields[$0].isPrimaryKey }
        let hasRowIDKey =
            primaryKey.count == 1 && (byField[primaryKey[0]]?.columnType ?? fields[primaryKey[0]].type).nonOptional.isInteger
            && !schema.withoutRowID
        let table = quoteIdentifier(schema.table)
        let columns = fields.map { quoteIdentifier($0.column) }
        let columnList = columns.joined(separator: ", ")
        let nonKey = fields.indices.filter { !fields[$0].isPrimaryKey }

        func assignments(_ indices: [Int], separator: String = ", ") -> String {
            indices.map { "\(columns[$0]) = ?\($0 + 1)" }.joined(separator: separator)
        }
        func insert(_ indices: [Int]) -> String {
            "INSERT INTO \(table) (\(indices.map { columns[$0] }.joined(separator: ", "))) "
                + "VALUES (\(indices.map { "?\($0 + 1)" }.joined(separator: ", ")))"
        }
        let keyCondition = assignments(primaryKey, separator: " AND ")
        let conflictAction =
            nonKey.isEmpty
            ? "NOTHING" : "UPDATE SET " + nonKey.map { "\(columns[$0]) = excluded.\(columns[$0])" }.joined(separator: ", ")

        self.primaryKey = primaryKey
        self.hasRowIDKey = hasRowIDKey
        self.rowIDKeyMayBeNil = hasRowIDKey && fields[primaryKey[0]].isOptional
        self.optionalRowIDKey = rowIDKeyMayBeNil ? primaryKey[0] : -1
        self.optionalRowIDKeyPath = rowIDKeyMayBeNil ? fields[primaryKey[0]].keyPath : nil
        self.quotedName = table
        self.columnList = columnList
        self.keyCondition = keyCondition
        self.keyPaths = KeyPathIndex(schema, transformed: Set(byField.indices.filter { byField[$0] != nil }))
        self.fieldColumns = fields.map { .column(table: schema.table, name: $0.column) }
        self.selectedColumns = [.keyword(columnList)]
        self.modelSelect = SelectHead(table: schema.table, columns: selectedColumns)
        if let deletedAt = fields.firstIndex(where: { $0.name == "deletedAt" }) {
            self.liveRowsCondition = .postfix(fieldColumns[deletedAt], "IS NULL")
        } else {
            self.liveRowsCondition = .failure(.misuse("\(schema.name) is a SoftDeletableModel without a stored property 'deletedAt'"))
        }
        statements = Statement.allCases.map { statement in
            switch statement {
            case .insert: insert(Array(fields.indices))
            case .update: "UPDATE \(table) SET \(assignments(nonKey.isEmpty ? primaryKey : nonKey)) WHERE \(keyCondition)"
            case .upsert:
                insert(Array(fields.indices))
                    + " ON CONFLICT (\(primaryKey.map { columns[$0] }.joined(separator: ", "))) DO \(conflictAction)"
            case .delete: "DELETE FROM \(table) WHERE \(keyCondition)"
            case .selectByKey: "SELECT \(columnList) FROM \(table) WHERE \(keyCondition)"
            case .selectByRowID: "SELECT \(columnList) FROM \(table) WHERE rowid = ?"
            }
        }
    }

    /// `UPDATE … SET` only the fields at `indices`.
    func updateSQL(only indices: [Int]) -> String {
        let set = indices.map { "\(quoteIdentifier(schema.fields[$0].column)) = ?\($0 + 1)" }.joined(separator: ", ")
        return "UPDATE \(quotedName) SET \(set) WHERE \(keyCondition)"
    }

    /// The type field `index`'s column holds: the property's own, or its transformer's
    /// representation when the field is stored through it.
    public func columnType(_ index: Int) -> FieldType {
        transformedColumns[index]?.transform.columnType ?? schema.fields[index].type
    }

    /// Field `index`'s value as its column stores it; nil when the value has no SQL form.
    func storedValue(_ value: Any, field index: Int) throws -> SQLValue? {
        if let transformed = transformedColumns[index] { return try transformed.transform.store(value) }
        return try sqlValue(of: value)
    }

    // MARK: - DDL

    /// The statements that add field `index`'s column to an existing table. `ADD COLUMN`
    /// cannot carry UNIQUE, so a unique field gets a unique index instead.
    func addColumnStatements(_ index: Int) -> [String] {
        let field = schema.fields[index]
        var statements = ["ALTER TABLE \(quoteIdentifier(name)) ADD COLUMN \(columnDefinition(index, unique: false))"]
        if field.isUnique {
            let indexName = "\(name)_\(field.column)_unique"
            statements.append("CREATE UNIQUE INDEX \(quoteIdentifier(indexName)) ON \(quoteIdentifier(name)) (\(quoteIdentifier(field.column)))")
        }
        return statements
    }

    /// The column definition of field `index`: `"name" TYPE [NOT NULL] [DEFAULT …] …`.
    /// `unique: false` leaves out `UNIQUE` (which `ALTER TABLE ... ADD COLUMN` cannot take).
    func columnDefinition(_ index: Int, unique: Bool = true) -> String {
        let field = schema.fields[index]
        var definition = "\(quoteIdentifier(field.column)) \(columnType(index).sqlType)"
        if primaryKey == [index] {
            definition += " PRIMARY KEY"
            if field.isAutoincrement && hasRowIDKey { definition += " AUTOINCREMENT" }
        }
        if !field.isOptional, !(hasRowIDKey && primaryKey == [index]) { definition += " NOT NULL" }
        if let literal = defaultLiteral(index) { definition += " DEFAULT \(literal)" }
        if unique && field.isUnique { definition += " UNIQUE" }
        return definition
    }

    /// Field `index`'s declared default as a SQL literal (in its stored form), when it is a
    /// constant (not a call such as `Date()`, whose value differs at each use) and has a SQL form.
    func defaultLiteral(_ index: Int) -> String? {
        guard let value = schema.fields[index].defaultValue, !value.source.contains("(") else { return nil }
        return (try? storedValue(value.value(), field: index))?.map(\.sqlLiteral)
    }

    /// `CREATE TABLE` for the model; `name` replaces the table's name (to build a copy), and
    /// `constraints` are appended to the column definitions (the `FOREIGN KEY` clauses of the
    /// model's relations, see ``SQLModel/createTableSQL(ifNotExists:named:)``).
    public func createTableSQL(ifNotExists: Bool = false, named name: String? = nil, constraints: [String] = []) -> String {
        var parts = schema.fields.indices.map { columnDefinition($0) }
        let quote = { (names: [String]) in names.map { quoteIdentifier(self.column(of: $0)) }.joined(separator: ", ") }
        if primaryKey.count > 1 {
            parts.append("PRIMARY KEY (\(quote(primaryKey.map { schema.fields[$0].name })))")
        }
        for group in schema.uniqueGroups {
            parts.append("UNIQUE (\(quote(group)))")
        }
        parts += constraints
        return "CREATE TABLE \(ifNotExists ? "IF NOT EXISTS " : "")\(name.map(quoteIdentifier) ?? quotedName) (" + parts.joined(separator: ", ") + ")"
            + (schema.withoutRowID ? " WITHOUT ROWID" : "")
    }

    /// The model's indexes: `(name, CREATE INDEX …)`.
    public var indexes: [(name: String, sql: String)] {
        let single = schema.fields.filter(\.isIndexed).map { [$0.name] }
        return (single + schema.indexes).map { names in
            let columns = names.map(column(of:))
            let indexName = "\(schema.table)_" + columns.joined(separator: "_")
            let list = columns.map(quoteIdentifier).joined(separator: ", ")
            return (indexName, "CREATE INDEX IF NOT EXISTS \(quoteIdentifier(indexName)) ON \(quotedName) (\(list))")
        }
    }

    /// The column of a property name (the name itself when it is not a field).
    func column(of property: String) -> String {
        schema.field(named: property)?.column ?? property
    }
}

extension FieldType {
    var isInteger: Bool {
        if case .integer = self { return true }
        return false
    }
}

/// A yes-or-no question about a model type, asked of the runtime once and then read from one
/// atomic word: a metatype cast per query (a conformance lookup) cost more than the query's
/// shape check, and a lock's two calls would too. The word holds the type's identity with the
/// answer in its low bit, so a table that ever answered for another type asks again.
@usableFromInline
final class TypeAnswerMemo: Sendable {
    /// 0 until answered.
    private let word = AtomicWord()

    /// The answer for `type`, from `ask` the first time.
    @usableFromInline
    func answer(for type: Any.Type, _ ask: () -> Bool) -> Bool {
        // Metadata is pointer-aligned, so the low bit is free.
        let identity = UInt(bitPattern: ObjectIdentifier(type))
        let stored = word.value
        if stored & ~1 == identity { return stored & 1 == 1 }
        let answer = ask()
        word.value = identity | (answer ? 1 : 0)
        return answer
    }
}
