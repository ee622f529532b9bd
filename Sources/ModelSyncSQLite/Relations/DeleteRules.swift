import CSQLite
import ModelSyncCore

// Delete rules. Where a SQL foreign key can express the rule (belongsTo: one column holding
// one table's key), it is a `FOREIGN KEY … ON DELETE` clause of the referring table and SQLite
// applies it to every delete, ActiveRecord or raw SQL. Polymorphic references have no SQL
// foreign key: `delete(_:)` applies their rules first, in the same transaction. A restrict
// failure of either kind is a `RelationError.deleteRestricted` naming both tables.

extension SQLModel {
    /// `CREATE TABLE` for the model with the `FOREIGN KEY` clauses of its ``relations``;
    /// `name` replaces the table's name (to build a copy).
    public static func createTableSQL(ifNotExists: Bool = false, named name: String? = nil) throws -> String {
        try sqlTable.createTableSQL(ifNotExists: ifNotExists, named: name, constraints: relations.compactMap { try $0.foreignKeyClause() })
    }

    /// Deletes the row after the library-applied rules of ``relations``: all restrict checks,
    /// then cascades and set-nulls, then the row, in one transaction (a savepoint when
    /// nested). Returns whether there was a row.
    func deleteFollowingRules(_ db: SQLiteConnection) throws -> Bool {
        let relations = Self.relations
        do {
            guard !relations.isEmpty else {
                try run(.delete, db)
                return db.changes > 0
            }
            return try db.transaction {
                for relation in relations { try relation.checkDelete(of: self, db) }
                for relation in relations { try relation.prepareDelete(of: self, db) }
                try run(.delete, db)
                return db.changes > 0
            }
        } catch let error as SQLiteError where foreignKeyFailures.contains(error.extendedCode) {
            throw try restrictViolation(db) ?? error
        }
    }

    /// After SQLite refused to delete this row for a foreign key: the first table whose
    /// restricting foreign key refers to the row, found through `pragma_foreign_key_list`.
    private func restrictViolation(_ db: SQLiteConnection) throws -> RelationError? {
        let table = Self.sqlTable.name
        let references = try db.rows(
            """
            SELECT m.name, f."from", f."to" FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f
            WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE AND f.on_delete IN ('RESTRICT', 'NO ACTION')
            """, [.text(table)])
        for reference in references {
            guard let referencing = reference[0].textValue, let column = reference[1].textValue else { continue }
            let referred = reference[2].textValue ?? Self.schema.primaryKey.first.flatMap { Self.schema.field(named: $0)?.column }
            guard let index = Self.schema.fields.firstIndex(where: { $0.column == referred }) else { continue }
            let rows = try db.scalar(
                "SELECT count(*) FROM \(quoteIdentifier(referencing)) WHERE \(quoteIdentifier(column)) = ?", [fieldValue(index)])
            if let rows = rows?.integerValue, rows > 0 {
                return .deleteRestricted(table: table, referencingTable: referencing, columns: [column], rows: Int(rows))
            }
        }
        return nil
    }
}

/// The extended codes of a refused foreign key: `SQLITE_CONSTRAINT_FOREIGNKEY`, and
/// `SQLITE_CONSTRAINT_TRIGGER`, which an `ON DELETE RESTRICT` action reports (SQLite runs
/// foreign-key actions as triggers). Macro expressions, which Swift does not import.
private let foreignKeyFailures: Set<Int32> = [SQLITE_CONSTRAINT | (3 << 8), SQLITE_CONSTRAINT | (7 << 8)]
