import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncServer
import PostgresNIO

/// Access rules over PostgreSQL, in two layers.
///
/// 1. The queries: every read adds the caller's ``RowFilter`` of each collection to its `WHERE`
///    (lists count and page only the rows the caller sees), and every write checks
///    ``ItemOperation/checkAccess(to:replacement:)`` as the JSON backend does.
/// 2. Row-level security, in case a query forgets: under rules every collection table has
///    policies (`modelsync_read`, `_insert`, `_update`, `_delete`) that encode the same rule
///    from transaction-local settings, `modelsync.user_id` and `modelsync.role`, which the
///    server sets (``identityStatement(_:)``) at the start of every transaction it runs for a
///    request, and once per operation in a write transaction (a group commit holds several
///    callers' writes). A connection that forgot them reads as an anonymous caller.
///
/// `modelsync.system = 'on'` admits every row: the id functions set it for their own run only
/// (a create's new id must not land on a row the caller cannot see), and the server sets it in
/// its own work (the live stream's reader, accounts, export). The settings guard against a
/// forgotten filter in the server's code, not against SQL run as the server's role, which may
/// set them.
///
/// The bookkeeping tables (state, resources, tombstones, idempotency keys, accounts) have no
/// policies: only the server reads them, and it serves them through no route; idempotency keys
/// are scoped per user (``ItemOperation/idempotencyScope``).
extension PostgresBackend {
    /// How the server meets row-level security under access rules.
    struct RowSecurity: Sendable {
        var rules: AccessRules
        /// The role each request's transaction takes (`SET LOCAL ROLE`), when the URL names one.
        var role: String?
    }

    /// The statement that makes the transaction's statements run as `caller` (and, with a role
    /// configured, as that role). `system` admits every row: the server's own work.
    func identityStatement(_ caller: Caller, system: Bool = false) -> PostgresQuery {
        var sql = BoundSQL("SELECT set_config('modelsync.user_id', ")
        sql.append("\(sql.bind(caller.userID ?? "")), true), set_config('modelsync.role', \(sql.bind(caller.role ?? "")), true), ")
        // Set every time: a session-wide value (the stream's connection) must not carry over.
        sql.append("set_config('modelsync.system', \(sql.bind(system ? "on" : "")), true)")
        if let role = rowSecurity?.role { sql.append(", set_config('role', \(sql.bind(role)), true)") }
        return sql.query
    }

    /// The SQL condition on the rows of `collection`'s table (named `alias` in the statement,
    /// when given) that `filter` admits, its user ids bound (see ``SharedRowsSQL``).
    func rowCondition(_ filter: RowFilter, _ sql: inout BoundSQL, of collection: String, alias: String? = nil) -> String {
        shared.condition(filter, of: .table(collection: collection, alias: alias), user: { sql.bind($0) })
    }

    // MARK: Policies

    /// Makes the collection tables' policies say `rules` (replacing earlier ones), forces them
    /// on the tables' owner, and lets `role` reach the tables; without rules, removes them.
    /// Under sharing rules, first makes what their lookups need (``SharedRowsSQL/creation``).
    static func installRowSecurity(_ security: RowSecurity?, schema: PostgresSchema, tables: [String: String], client: PostgresClient, logger: Logger) async throws {
        if security == nil {
            // Only when an earlier server under rules left them: a start without rules costs one query.
            var check = BoundSQL("SELECT coalesce(bool_or(relrowsecurity), false) FROM pg_class WHERE oid = ANY(ARRAY(SELECT to_regclass(name) FROM unnest(")
            check.append(check.bind(tables.values.map(schema.table)) + "::text[]) AS name))")
            let secured: [Bool] = try await client.guardedRows(check.query, as: Bool.self, logger: logger)
            guard secured.first == true else { return }
        }
        try await client.guardedTransaction(logger: logger) { connection in
            try await connection.guardedRun(schema.changeLock, logger: logger)
            // Generated columns rewrite their tables once: no statement timeout for these.
            try await connection.guardedRun("SET LOCAL statement_timeout = 0", logger: logger)
            let shared = security.map { SharedRowsSQL(schema: schema, tables: tables, rules: $0.rules) }
            for statement in (shared?.creation ?? []) + rowSecurityStatements(security, schema: schema, tables: tables) {
                try await connection.guardedRun(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }

    /// The statements of ``installRowSecurity(_:schema:tables:client:logger:)``; `tables` maps
    /// collection names to their tables' unquoted names.
    ///
    /// Each operation has its policy: `SELECT` admits the rows a caller lists or reads by id
    /// (under a sharing rule, those reaching the lower of `list` and `view`: the queries narrow
    /// each read to its own), `INSERT` the rows it may create, `UPDATE` those it may update,
    /// before and after, `DELETE` those it may delete.
    static func rowSecurityStatements(_ security: RowSecurity?, schema: PostgresSchema, tables: [String: String]) -> [String] {
        var statements: [String] = []
        let shared = SharedRowsSQL(schema: schema, tables: tables, rules: security?.rules)
        for (collection, table) in tables.sorted(by: { $0.key < $1.key }) {
            let target = schema.table(table)
            statements += ["read", "insert", "update", "delete"].map { "DROP POLICY IF EXISTS modelsync_\($0) ON \(target)" }
            guard let security else {
                statements.append("ALTER TABLE \(target) NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY")
                continue
            }
            let rule = security.rules.rule(for: collection)
            let (read, create, update, delete): (String, String, String, String)
            if let sharing = rule?.sharing {
                func rows(_ needed: SharingRule.Standing, countingOwner: Bool = true) -> String {
                    sharingPolicyCondition(collection, reaching: needed, rules: security.rules, shared: shared, countingOwner: countingOwner)
                }
                // A create counts only the standing the new row inherits (its owner field is the
                // caller's); a member reads their own memberships, and may delete them (leave),
                // never update them (``AccessRules/access(to:for:)``).
                var (listed, deleted) = (rows(min(sharing.list, sharing.view)), rows(sharing.delete))
                if let membership = security.rules.membershipLink(of: collection) {
                    let own = shared.field(membership.link.user, of: .table(collection: collection, alias: nil))
                    let named = "(\(policyUser) IS NOT NULL AND \(own) = \(policyUser))"
                    (listed, deleted) = ("(\(listed)) OR \(named)", "(\(deleted)) OR \(named)")
                }
                (read, create, update, delete) = (listed, rows(sharing.create, countingOwner: false), rows(sharing.update), deleted)
            } else {
                let write = policyCondition(rule, needed: .readWrite, schema: schema)
                (read, create, update, delete) = (policyCondition(rule, needed: .read, schema: schema), write, write, write)
            }
            statements += [
                "ALTER TABLE \(target) ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY",
                "CREATE POLICY modelsync_read ON \(target) FOR SELECT USING (\(read))",
                "CREATE POLICY modelsync_insert ON \(target) FOR INSERT WITH CHECK (\(create))",
                "CREATE POLICY modelsync_update ON \(target) FOR UPDATE USING (\(update)) WITH CHECK (\(update))",
                "CREATE POLICY modelsync_delete ON \(target) FOR DELETE USING (\(delete))",
            ]
        }
        if let role = security?.role { statements += grants(to: role, schema: schema) }
        return statements
    }

    /// Under a sharing rule, a policy's condition on `record`: admins and the server's own work
    /// see every row; everyone else the rows of `collection` on which they stand at `needed` at
    /// least, by the same filter the queries use, with the user from `modelsync.user_id`.
    static func sharingPolicyCondition(
        _ collection: String, reaching needed: SharingRule.Standing, rules: AccessRules, shared: SharedRowsSQL, countingOwner: Bool = true
    ) -> String {
        let (user, bypass) = (policyUser, policyBypass(shared.schema))
        if needed <= .everyone { return "true" }
        if needed >= .admin { return bypass }
        // Every signed-in caller who is not an admin gets a filter of the same shape: one made
        // for any of them, its user ids written as the setting.
        let filter = rules.rows(of: collection, reaching: needed, for: Caller(userID: "policy"), countingOwner: countingOwner)
        // Behind the bypass the policy filters row by row: its memberships as a hashed set.
        let condition = shared.condition(filter, of: .table(collection: collection, alias: nil), user: { _ in user }, indexed: false)
        return "\(bypass) OR (\(user) IS NOT NULL AND (\(condition)))"
    }

    /// The caller's user id in a policy (NULL: anonymous).
    static let policyUser = "nullif(current_setting('modelsync.user_id', true), '')"

    /// A policy's condition that admits every row to admins and to the server's own work.
    static func policyBypass(_ schema: PostgresSchema) -> String {
        let role = "nullif(current_setting('modelsync.role', true), '')"
        return "coalesce(current_setting('modelsync.system', true) = 'on', false) OR coalesce(\(role) = \(schema.literal(Caller.adminRole)), false)"
    }

    /// The statements that let `role` reach the schema's tables, sequences and functions.
    static func grants(to role: String, schema: PostgresSchema) -> [String] {
        let grantee = quotePostgres(role)
        return [
            "GRANT USAGE ON SCHEMA \(schema.quoted) TO \(grantee)",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \(schema.quoted) TO \(grantee)",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA \(schema.quoted) TO \(grantee)",
            "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA \(schema.quoted) TO \(grantee)",
            // A view runs as its owner: through it the role would read as the owner does.
            "REVOKE ALL ON \(schema.allRecords) FROM \(grantee)",
        ]
    }

    /// A rule as a policy's condition on `record`: admins and the server's own work see every
    /// row; otherwise the mode of the caller's role (or the rule's), digit by digit.
    static func policyCondition(_ rule: AccessRules.Rule?, needed: AccessRules.Mode.Right, schema: PostgresSchema) -> String {
        let user = policyUser
        let role = "nullif(current_setting('modelsync.role', true), '')"
        let bypass = policyBypass(schema)
        guard let rule else { return bypass }
        func rows(_ mode: AccessRules.Mode) -> String {
            if mode.everyone >= needed { return "true" }
            if mode.signedIn >= needed { return "\(user) IS NOT NULL" }
            if mode.owner >= needed { return "coalesce(\(schema.textFunction)(record -> \(schema.literal(rule.ownerField))) = \(user), false)" }
            return "false"
        }
        let byRole = rule.roles.sorted { $0.key < $1.key }.map { "WHEN \(role) = \(schema.literal($0.key)) THEN \(rows($0.value))" }
        let modes = byRole.isEmpty ? rows(rule.mode) : "CASE \(byRole.joined(separator: " ")) ELSE \(rows(rule.mode)) END"
        return "\(bypass) OR (\(modes))"
    }

    /// Refuses access rules over a connection that row-level security does not bind (a
    /// superuser, a role with `BYPASSRLS`): its policies would hold nothing back.
    static func checkRowSecurityRole(_ security: RowSecurity, client: PostgresClient, logger: Logger) async throws {
        var query = BoundSQL("SELECT rolname, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = ")
        let named = security.role.map { query.bind($0) } ?? "current_user"
        query.append(named)
        guard let (name, bypasses) = try await client.guardedRows(query.query, as: (String, Bool).self, logger: logger).first else {
            throw ServerError.database("the role \(security.role ?? "") does not exist")
        }
        if bypasses {
            throw ServerError.unsupported(
                "access rules over PostgreSQL need a role that row-level security binds, and \(name) bypasses it (a superuser or BYPASSRLS): connect as another role, or name one with ?role=")
        }
    }
}
