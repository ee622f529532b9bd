import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer

/// Sharing rules (``SharingRule``) as SQL over the collection tables: the condition a
/// ``RowFilter`` puts on a table's rows (lists, the feed, the policies), and what the server
/// makes at start so that its lookups are indexed.
///
/// - Each field a sharing rule names (a membership's user and row fields, a parent field, an
///   owner field) gets a generated column on its collection's table, `modelsync_field_<hash>`,
///   the field as ``PostgresSchema/textFunction`` gives it, with a btree index. Under row-level
///   security PostgreSQL uses an index only for a comparison it knows leaks nothing
///   (`proleakproof`): `text = text` on a column is one, a comparison of an expression over
///   `jsonb` is not. An expression index would never be used under the policies.
/// - Each membership link gets a function `modelsync_members_<hash>(user)`, `SECURITY DEFINER`
///   with a fixed `search_path` and `modelsync.system` on for its run: the rows the user's
///   memberships are on, with the roles. The policies look memberships up through it: a policy
///   whose subquery reads a table that has policies of its own reading back (boards through
///   memberships, memberships through boards) is "infinite recursion detected in policy". It
///   also reads the memberships whatever their own rule says, as ``RowLookups`` does.
/// - A parent lookup is a subquery on the parent's table. Chains end (``AccessRules``
///   validates them), so no policy reads back into itself; the subquery is held to the parent
///   table's `SELECT` policy too, which admits every row the filter asks for unless a parent's
///   `list` and `view` both need more than the child's operation.
struct SharedRowsSQL: Sendable {
    let schema: PostgresSchema
    /// Each collection's table, schema-qualified and quoted.
    let tables: [String: String]
    /// Each collection's table, unquoted.
    let tableNames: [String: String]
    /// For each collection, the generated column (unquoted) of each field the rules name.
    let columns: [String: [String: String]]
    /// The membership links whose collection has a table (each has its function).
    let links: [SharingRule.Membership]

    /// `tables` maps collection names to their tables' unquoted names.
    init(schema: PostgresSchema, tables: [String: String], rules: AccessRules?) {
        self.schema = schema
        tableNames = tables
        self.tables = tables.mapValues(schema.table)
        var fields: [String: Set<String>] = [:]
        var links: [SharingRule.Membership] = []
        for collection in tables.keys.sorted() {
            guard let sharing = rules?.rule(for: collection)?.sharing else { continue }
            if let owner = sharing.owner, owner != "id" { fields[collection, default: []].insert(owner) }
            if let parent = sharing.parent { fields[collection, default: []].insert(parent.field) }
            if let link = sharing.members, tables[link.collection] != nil {
                fields[link.collection, default: []].formUnion([link.user, link.field].filter { $0 != "id" })
                if !links.contains(link) { links.append(link) }
            }
        }
        columns = fields.filter { tables[$0.key] != nil }.mapValues { names in
            Dictionary(uniqueKeysWithValues: names.map { ($0, "modelsync_field_" + stableHash($0.utf8)) })
        }
        self.links = links
    }

    /// Where a condition reads a row's fields.
    enum Source {
        /// A row of the collection's table (its columns, prefixed with `alias.` when given).
        case table(collection: String, alias: String?)
        /// A JSON object (a tombstone's fields).
        case json(String)
    }

    /// The SQL condition of the rows `filter` admits. `user` writes a user id of the filter (a
    /// bound value), or an expression in its place (the policies'). With `tombstones`, a parent
    /// that was deleted is found in its tombstone's fields (the feed's deletions).
    ///
    /// A table's rows on which the user has a membership are `id_text = ANY(ARRAY(…))`: the
    /// array is read once, and PostgreSQL looks its ids up in the index (with an owner's rows, a
    /// `BitmapOr` of two index scans), so the cost follows the user's memberships, not the
    /// table. Where the condition can only filter row by row (`indexed` false: a policy's own
    /// rows, behind its bypass; a tombstone's fields), `IN (SELECT …)`: a hash probe per row
    /// where an array is searched from end to end.
    func condition(
        _ filter: RowFilter, of source: Source, user: (String) -> String, tombstones: Bool = false, indexed: Bool = true, depth: Int = 0
    ) -> String {
        // A parent's rows are a subquery of their own, which an index serves; `any` stays on this row.
        func nested(_ filter: RowFilter, _ source: Source, indexed: Bool = true) -> String {
            condition(filter, of: source, user: user, tombstones: tombstones, indexed: indexed, depth: depth + 1)
        }
        switch filter {
        case .everything: return "true"
        case .nothing: return "false"
        case .ownedBy(let field, let userID):
            return "\(self.field(field, of: source)) = \(user(userID))"
        case .member(let link, let userID, let roles):
            guard links.contains(link), !roles.isEmpty else { return "false" }
            let accepted = roles.map(schema.literal).joined(separator: ", ")
            let rows = "SELECT member_row FROM \(memberFunction(link))(\(user(userID))) WHERE member_role IN (\(accepted))"
            if indexed, case .table = source { return "\(field("id", of: source)) = ANY(ARRAY(\(rows)))" }
            return "\(field("id", of: source)) IN (\(rows))"
        case .parent(let field, let collection, let rows):
            let named = self.field(field, of: source)
            var found: [String] = []
            if let table = tables[collection] {
                let alias = "parent_\(depth)"
                found.append("\(named) IN (SELECT \(alias).id_text FROM \(table) AS \(alias) WHERE \(nested(rows, .table(collection: collection, alias: alias))))")
            }
            if tombstones {
                let alias = "gone_\(depth)"
                found.append("""
                    \(named) IN (SELECT \(schema.textFunction)(\(alias).fields -> 'id') FROM \(schema.tombstones) AS \(alias) \
                    WHERE \(alias).collection = \(schema.literal(collection)) AND NOT \(alias).departed AND \(alias).fields IS NOT NULL \
                    AND \(nested(rows, .json("\(alias).fields"))))
                    """)
            }
            return found.isEmpty ? "false" : "(" + found.joined(separator: " OR ") + ")"
        case .any(let filters):
            return filters.isEmpty ? "false" : "(" + filters.map { nested($0, source, indexed: indexed) }.joined(separator: " OR ") + ")"
        }
    }

    /// A field of the row as text (as ``scalarText(_:)`` gives it).
    func field(_ name: String, of source: Source) -> String {
        switch source {
        case .table(let collection, let alias):
            let prefix = alias.map { $0 + "." } ?? ""
            if name == "id" { return prefix + "id_text" }
            if let column = columns[collection]?[name] { return prefix + quotePostgres(column) }
            return "\(schema.textFunction)(\(prefix)record -> \(schema.literal(name)))"
        case .json(let value):
            return "\(schema.textFunction)(\(value) -> \(schema.literal(name)))"
        }
    }

    /// The statement that indexes a generated column of the table `table` (unquoted: `tableName`).
    static func columnIndex(_ column: String, table: String, tableName: String) -> String {
        let index = "modelsync_field_index_" + stableHash((tableName + "\u{0}" + column).utf8)
        return "CREATE INDEX IF NOT EXISTS \(quotePostgres(index)) ON \(table) (\(quotePostgres(column)))"
    }

    /// The function of a membership link (see the type's notes).
    func memberFunction(_ link: SharingRule.Membership) -> String {
        func counted(_ text: String) -> String { "\(text.utf8.count):\(text)" }
        let key = counted(link.collection) + counted(link.field) + counted(link.user) + counted(link.role)
        return schema.quoted + "." + quotePostgres("modelsync_members_" + stableHash(key.utf8))
    }

    /// The function that reads a record by table and id whatever the policies say, for the
    /// write checks' lookups of parents.
    var recordFunction: String { schema.quoted + ".modelsync_record_of" }

    /// The statements that make the generated columns, their indexes and the functions (run at
    /// start, under the schema's change lock; each stands when it was made already).
    var creation: [String] {
        var statements: [String] = []
        for (collection, fields) in columns.sorted(by: { $0.key < $1.key }) {
            guard let table = tables[collection], let tableName = tableNames[collection] else { continue }
            for (field, column) in fields.sorted(by: { $0.key < $1.key }) {
                // Stored: computed once per write, where the lookups read it for every row.
                statements.append("""
                    ALTER TABLE \(table) ADD COLUMN IF NOT EXISTS \(quotePostgres(column)) text \
                    GENERATED ALWAYS AS (\(schema.textFunction)(record -> \(schema.literal(field)))) STORED
                    """)
                statements.append(Self.columnIndex(column, table: table, tableName: tableName))
            }
        }
        let pinned = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET modelsync.system = 'on'"
        for link in links {
            guard let table = tables[link.collection] else { continue }
            let source = Source.table(collection: link.collection, alias: "m")
            let role = schema.literal(link.role)
            let body = """
                SELECT \(field(link.field, of: source)), m.record ->> \(role) FROM \(table) AS m \
                WHERE \(field(link.user, of: source)) = $1 AND \(field(link.field, of: source)) IS NOT NULL AND jsonb_typeof(m.record -> \(role)) = 'string'
                """
            statements.append("""
                CREATE OR REPLACE FUNCTION \(memberFunction(link))(member text) RETURNS TABLE (member_row text, member_role text) \
                LANGUAGE sql STABLE \(pinned) ROWS 20 AS \(schema.literal(body))
                """)
        }
        // Runs as its owner, so it reads only this schema's tables (not its views, not another
        // server's schema), whatever a caller passes.
        let record = """
            DECLARE found text;
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = target AND relkind = 'r' AND relnamespace = \(schema.literal(schema.quoted))::regnamespace) THEN
                    RAISE EXCEPTION 'modelsync: % is not a table of this schema', target;
                END IF;
                EXECUTE format('SELECT record::text FROM %s WHERE id_text = $1', target) INTO found USING wanted;
                RETURN found;
            END
            """
        statements.append("""
            CREATE OR REPLACE FUNCTION \(recordFunction)(target regclass, wanted text) RETURNS text \
            LANGUAGE plpgsql STABLE \(pinned) AS \(schema.literal(record))
            """)
        return statements
    }
}
