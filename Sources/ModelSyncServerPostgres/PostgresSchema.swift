import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

/// SQL text with its bound values: every value goes in as a parameter, never into the text.
struct BoundSQL {
    private(set) var text = ""
    private(set) var bindings = PostgresBindings()
    private var count = 0

    init(_ text: String = "") { self.text = text }

    mutating func append(_ sql: String) { text += sql }

    /// Binds `value` and returns its placeholder (`$3`).
    mutating func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
        bindings.append(value)
        count += 1
        return "$\(count)"
    }

    /// Binds `value`, or gives `NULL` for nil.
    mutating func bindOrNull(_ value: (some PostgresDynamicTypeEncodable)?) -> String {
        value.map { bind($0) } ?? "NULL"
    }

    /// Binds a JSON value as `jsonb`.
    mutating func bind(json value: JSONValue) -> String {
        bind(String(decoding: value.jsonBytes(), as: UTF8.self)) + "::jsonb"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: bindings) }
}

/// `"name"` with inner double quotes doubled.
func quotePostgres(_ name: String) -> String {
    "\"" + name.replacingASCII(UInt8(ascii: "\""), with: "\"\"") + "\""
}

/// The server's tables in one schema of PostgreSQL.
///
/// - `modelsync_state`: one row, the change sequence, the tombstone horizon and when the data
///   last changed. Every write takes its sequence value from it and holds its lock to the commit,
///   so writes commit in sequence order and the feed never skips one (a reader sees a prefix of
///   the sequence).
/// - `modelsync_resources`: the top-level names in the data's order: collections (with their
///   table and `deleted_id`, the highest integer id ever deleted from them, so that new ids go
///   above it and no id is given twice) and singular resources (with their value).
/// - `modelsync_records_<n>`, one per collection: `row_id` (a bigint identity: the list order),
///   `id_text` (the record's id as text, unique: routes and filters compare ids as text),
///   `version` (the sequence value of its last write, unique: the feed's index) and `record`
///   (`jsonb`).
/// - `modelsync_all_records`: a view of every collection table, named by table, so that a read
///   by id is one statement whose text never changes: each connection prepares it once (its
///   `search_path` is the schema).
/// - `modelsync_tombstones`: deleted records, kept for the feed limits, with the deleted row's
///   `owner` under access rules and, under a sharing rule, the `fields` its filters read
///   (``ItemOperation/sharedFields(of:)``); and, `departed`, the rows an admin gave to another
///   owner or that moved where a sharing rule reads (a card to another board): the feeds of
///   those who saw them show them as deletions (see ``PostgresBackend/readChanges``).
/// - `modelsync_accounts`: the built-in accounts' credentials by normalized email (the user's
///   id, the password's hash, the role). No route reads this table, and no collection holds it.
/// - `modelsync_idempotency_keys`: the keys of writes and their first answers (status, body and
///   version).
/// - `modelsync_text(jsonb)`: a value as the text filters compare (json-server's rules).
/// - `modelsync_highest_id(regclass, integer, bigint)`: a collection's highest integer id, read
///   afresh (a volatile function's query takes a new snapshot): called once the statement that
///   creates holds the state row's lock, it sees every create committed before.
/// - `modelsync_records_<n>_write(…)`, one per collection: a group of creates and updates
///   written without reading first (see ``writeFunctionCreation(_:)``). Its SQL is static, so
///   PostgreSQL plans it once per connection instead of once per group.
struct PostgresSchema: Sendable {
    let name: String
    // Quoted once: nearly every statement names one of these.
    let quoted: String
    let state: String
    let resources: String
    let tombstones: String
    let idempotencyKeys: String
    let accounts: String
    let idTakenFunction: String
    let textFunction: String
    let allRecords: String
    let highestIDFunction: String
    /// The `NOTIFY` channel of this schema's writes: `modelsync_changes_` and the schema's name,
    /// or `modelsync_changes-` and a hash of it for a name that cannot stand there. A channel
    /// is an identifier of at most 63 bytes (`pg_notify` rejects a longer one, which would fail
    /// every write), and PostgresNIO's `LISTEN` quotes it without doubling a `"`.
    let channel: String

    init(name: String) {
        self.name = name
        quoted = quotePostgres(name)
        state = quoted + ".modelsync_state"
        resources = quoted + ".modelsync_resources"
        tombstones = quoted + ".modelsync_tombstones"
        idempotencyKeys = quoted + ".modelsync_idempotency_keys"
        accounts = quoted + ".modelsync_accounts"
        idTakenFunction = quoted + ".modelsync_id_taken"
        textFunction = quoted + ".modelsync_text"
        allRecords = quoted + ".modelsync_all_records"
        highestIDFunction = quoted + ".modelsync_highest_id"
        let plainChannel = "modelsync_changes_" + name
        channel = plainChannel.utf8.count <= 63 && !name.utf8.contains(UInt8(ascii: "\""))
            ? plainChannel : "modelsync_changes-" + stableHash(name.utf8)
    }

    func table(_ table: String) -> String { quoted + "." + quotePostgres(table) }

    /// A row with the state table's name when the schema holds data, NULL when not.
    var holdsData: PostgresQuery {
        var query = BoundSQL("SELECT to_regclass(")
        query.append(query.bind(state) + ")::text")
        return query.query
    }

    /// The statements that create the tables (for an empty schema).
    var creation: [String] {
        [
            "CREATE SCHEMA IF NOT EXISTS \(quoted)",
            """
            CREATE TABLE \(state) (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                sequence bigint NOT NULL, horizon bigint NOT NULL, modified timestamptz NOT NULL)
            """,
            """
            CREATE TABLE \(resources) (
                name text PRIMARY KEY, position integer NOT NULL,
                kind text NOT NULL CHECK (kind IN ('collection', 'singular', 'value')),
                table_name text UNIQUE, value jsonb, deleted_id numeric NOT NULL DEFAULT 0)
            """,
            """
            CREATE TABLE \(tombstones) (
                sequence bigint PRIMARY KEY, collection text NOT NULL, id jsonb NOT NULL, at timestamptz NOT NULL,
                owner text, departed boolean NOT NULL DEFAULT false, fields jsonb)
            """,
            accountsCreation,
            accountsByUser,
            "CREATE INDEX ON \(tombstones) (at)",
            """
            CREATE TABLE \(idempotencyKeys) (
                key text PRIMARY KEY, collection text NOT NULL, request jsonb NOT NULL, response jsonb NOT NULL, at timestamptz NOT NULL,
                status integer, version bigint)
            """,
            "CREATE INDEX ON \(idempotencyKeys) (at)",
            """
            CREATE FUNCTION \(textFunction)(value jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
                SELECT CASE jsonb_typeof(value)
                    WHEN 'string' THEN value #>> '{}' WHEN 'number' THEN value::text
                    WHEN 'boolean' THEN value::text WHEN 'null' THEN 'null' END
            $$
            """,
            highestIDCreation,
            idTakenCreation,
        ]
    }

    /// The credentials of the built-in accounts (see ``PostgresBackend/register(email:passwordHash:profile:in:)``).
    var accountsCreation: String {
        """
        CREATE TABLE IF NOT EXISTS \(accounts) (
            email text PRIMARY KEY, collection text NOT NULL, user_id text NOT NULL, password_hash text NOT NULL, role text,
            generation bigint NOT NULL DEFAULT 0)
        """
    }

    /// What every request with a built-in token reads (by user id), and the column an earlier
    /// version's accounts table lacks: made when a server opens the schema.
    var accountUpgrades: [String] {
        [
            "ALTER TABLE \(accounts) ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0",
            accountsByUser,
        ]
    }

    var accountsByUser: String { "CREATE INDEX IF NOT EXISTS modelsync_accounts_user ON \(accounts) (user_id, collection)" }

    /// Whether a collection table holds a row with this id, whoever may read it: a create with an
    /// id must not land on a row row-level security hides (`modelsync.system` admits every row,
    /// for this function's run only).
    var idTakenCreation: String {
        """
        CREATE OR REPLACE FUNCTION \(idTakenFunction)(target regclass, wanted text) RETURNS boolean
        LANGUAGE plpgsql VOLATILE SET modelsync.system = 'on' AS \(literal("""
            DECLARE found boolean;
            BEGIN
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE id_text = $1)', target) INTO found USING wanted;
                RETURN found;
            END
            """))
        """
    }
    /// The function behind ``highestIDFunction``; `lockTaken` only orders the call after the
    /// statement's update of the state row. Fails with 22003 when `creates` new ids would pass
    /// `Int.max`.
    var highestIDCreation: String {
        let body = """
            DECLARE top numeric;
            BEGIN
                EXECUTE format('SELECT greatest(trunc(coalesce(max(integer_id), 0)), 0) FROM %s', target) INTO top;
                top := greatest(top, \(deletedIDFloor("(SELECT relname::text FROM pg_class WHERE oid = target)")));
                IF top + creates > 9223372036854775807 THEN
                    RAISE EXCEPTION 'no free integer id above %', top USING ERRCODE = 'numeric_value_out_of_range';
                END IF;
                RETURN top;
            END
            """
        // The body as a string literal, as the write functions': the schema's name inside cannot end it.
        return """
            CREATE FUNCTION \(highestIDFunction)(target regclass, creates integer, lock_taken bigint) RETURNS numeric
            LANGUAGE plpgsql VOLATILE SET modelsync.system = 'on' AS \(literal(body))
            """
    }

    /// The highest integer id deleted from the collection table whose unquoted name `tableName`
    /// (an SQL expression) gives: new ids go above it.
    func deletedIDFloor(_ tableName: String) -> String {
        "coalesce((SELECT deleted_id FROM \(resources) WHERE table_name = \(tableName)), 0)"
    }

    /// Text that the functions made by this version hold and earlier ones lacked: a function
    /// without it is made again at start.
    static let currentFunctionMarker = "deleted_id"

    /// The statements that give data imported by an earlier version this version's columns
    /// (`tables`: the collection tables, unquoted).
    func columnUpgrades(_ tables: [String]) -> [String] {
        [
            "ALTER TABLE \(resources) ADD COLUMN IF NOT EXISTS deleted_id numeric NOT NULL DEFAULT 0",
            "ALTER TABLE \(idempotencyKeys) ADD COLUMN IF NOT EXISTS status integer, ADD COLUMN IF NOT EXISTS version bigint",
            "ALTER TABLE \(tombstones) ADD COLUMN IF NOT EXISTS owner text, ADD COLUMN IF NOT EXISTS departed boolean NOT NULL DEFAULT false",
            "ALTER TABLE \(tombstones) ADD COLUMN IF NOT EXISTS fields jsonb",
            accountsCreation, idTakenCreation,
        ] + tables.map { "ALTER TABLE \(table($0)) ADD COLUMN IF NOT EXISTS created_with text" }
    }

    /// The write function of the collection table `table` (its unquoted name), schema-qualified.
    func writeFunction(_ table: String) -> String { quoted + "." + quotePostgres(table + "_write") }

    /// The write function's name with its argument types, as `to_regprocedure` reads it.
    func writeFunctionSignature(_ table: String) -> String {
        writeFunction(table) + "(bigint, bigint[], text[], text[], bigint[], bigint[], text[], boolean[])"
    }

    /// The function that writes a group of one collection's writes in one statement, `steps`
    /// sequence values from the state row (whose lock it takes first, so every statement after
    /// sees every write committed before): creates (each at its step, its record without an id)
    /// get the ids after the highest integer id; updates (by id, at their step) merge their body
    /// into the row (or replace all of it but the id) where the row has the version asked for (-1:
    /// any). Unless every write took, it fails with 22012 (the SQLSTATE of
    /// ``PostgresBackend/rowsMovedState``) and nothing is written; with 22003 when the new ids
    /// would pass `Int.max`. Returns the stored records by version, and the sequence value before
    /// the group with a NULL record; notifies the schema's channel.
    func writeFunctionCreation(_ table: String) -> String {
        let records = self.table(table)
        let body = """
            DECLARE
                base bigint;
                top numeric;
                versions bigint[] := '{}';
                records text[] := '{}';
                more_versions bigint[] := '{}';
                more_records text[] := '{}';
            BEGIN
                UPDATE \(state) SET sequence = sequence + steps, modified = \(PostgresBackend.nextModified)
                    RETURNING sequence - steps INTO base;
                IF base IS NULL THEN
                    RAISE EXCEPTION 'the state row of % is missing', \(literal(name));
                END IF;
                IF cardinality(create_steps) > 0 THEN
                    SELECT greatest(trunc(coalesce(max(integer_id), 0)), 0, \(deletedIDFloor(literal(table)))) INTO top FROM \(records);
                    IF top + cardinality(create_steps) > 9223372036854775807 THEN
                        RAISE EXCEPTION 'no free integer id above %', top USING ERRCODE = 'numeric_value_out_of_range';
                    END IF;
                    WITH inserted AS (
                        INSERT INTO \(records) (id_text, version, record)
                        SELECT (top + given.position)::text, base + given.step,
                            jsonb_build_object('id', top + given.position) || given.record::jsonb
                        FROM unnest(create_steps, create_records) WITH ORDINALITY AS given(step, record, position)
                        ORDER BY given.position
                        ON CONFLICT (id_text) DO NOTHING RETURNING version, record::text AS record)
                    SELECT coalesce(array_agg(inserted.version), '{}'), coalesce(array_agg(inserted.record), '{}')
                        INTO versions, records FROM inserted;
                END IF;
                IF cardinality(update_ids) > 0 THEN
                    WITH changed AS (
                        UPDATE \(records) AS target SET version = base + given.step,
                            record = CASE WHEN NOT given.merge THEN jsonb_build_object('id', target.record -> 'id')
                                WHEN jsonb_typeof(target.record) = 'object' THEN target.record ELSE '{}'::jsonb END || given.body::jsonb
                        FROM unnest(update_ids, update_versions, update_steps, update_bodies, update_merges)
                            AS given(id, expected, step, body, merge)
                        WHERE target.id_text = given.id AND (given.expected = -1 OR target.version = given.expected)
                        RETURNING target.version, target.record::text AS record)
                    SELECT coalesce(array_agg(changed.version), '{}'), coalesce(array_agg(changed.record), '{}')
                        INTO more_versions, more_records FROM changed;
                END IF;
                IF cardinality(versions) + cardinality(more_versions) <> steps THEN
                    RAISE EXCEPTION 'a write of the group did not take' USING ERRCODE = 'division_by_zero';
                END IF;
                PERFORM \(notifyCall)(base + steps)::text);
                RETURN QUERY SELECT * FROM unnest(versions || more_versions, records || more_records) UNION ALL SELECT base, NULL;
            END
            """
        // The body as a string literal: no name inside can end it.
        return """
            CREATE OR REPLACE FUNCTION \(writeFunction(table))(
                steps bigint, create_steps bigint[], create_records text[], update_ids text[], update_versions bigint[],
                update_steps bigint[], update_bodies text[], update_merges boolean[])
            RETURNS TABLE (stored_version bigint, stored_record text) LANGUAGE plpgsql VOLATILE AS \(literal(body))
            """
    }

    /// The statements that create one collection's table (and its write function).
    func collectionTable(_ table: String) -> [String] {
        [
            """
            CREATE TABLE \(self.table(table)) (
                row_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                id_text text UNIQUE, version bigint NOT NULL UNIQUE, record jsonb NOT NULL, created_with text,
                integer_id numeric GENERATED ALWAYS AS (
                    CASE WHEN jsonb_typeof(record -> 'id') = 'number' THEN
                        CASE WHEN (record -> 'id')::numeric = trunc((record -> 'id')::numeric) THEN (record -> 'id')::numeric END
                    END) STORED)
            """,
            // The next free id is the highest integer id + 1: one step down this index.
            "CREATE INDEX ON \(self.table(table)) (integer_id)",
            writeFunctionCreation(table),
        ]
    }

    /// The statement that (re)creates the view of every collection table (tables by their
    /// unquoted names).
    func allRecordsView(over tables: [String]) -> String {
        let columns = "id_text, version, record"
        let parts = tables.map { "SELECT \(literal($0))::text AS table_name, \(columns) FROM \(table($0))" }
        let union = parts.isEmpty
            ? "SELECT NULL::text AS table_name, NULL::text AS id_text, NULL::bigint AS version, NULL::jsonb AS record WHERE false"
            : parts.joined(separator: " UNION ALL ")
        return "CREATE OR REPLACE VIEW \(allRecords) AS \(union)"
    }

    /// The statements that drop everything the server keeps in the schema (the schema stays).
    var removal: [String] {
        [
            "DROP VIEW IF EXISTS \(allRecords)",
            // The block as a string literal, as the write functions' bodies: no name inside can end it.
            "DO " + literal("""
                DECLARE t text;
                BEGIN
                    IF to_regclass(\(literal(quoted + ".modelsync_resources"))) IS NOT NULL THEN
                        FOR t IN SELECT table_name FROM \(resources) WHERE table_name IS NOT NULL LOOP
                            -- CASCADE: a sharing rule's policies on other tables read this one.
                            EXECUTE format('DROP TABLE IF EXISTS %I.%I CASCADE', \(literal(name)), t);
                            EXECUTE format('DROP FUNCTION IF EXISTS %I.%I', \(literal(name)), t || '_write');
                        END LOOP;
                    END IF;
                END
                """),
            "DROP TABLE IF EXISTS \(state), \(resources), \(tombstones), \(idempotencyKeys), \(accounts)",
            "DROP FUNCTION IF EXISTS \(idTakenFunction)(regclass, text)",
            "DROP FUNCTION IF EXISTS \(textFunction)(jsonb)",
            "DROP FUNCTION IF EXISTS \(highestIDFunction)(regclass, integer, bigint)",
            "DROP FUNCTION IF EXISTS \(quoted).modelsync_record_of(regclass, text)",
        ]
    }

    /// How the write functions begin their `NOTIFY`: a function whose text lacks it (made by an
    /// earlier version for another channel) is made again.
    var notifyCall: String { "pg_notify(\(literal(channel)), " }

    /// The transaction-scoped lock that servers and imports on this schema take turns on to
    /// change its tables. Keyed by the schema's name: servers on other schemas of the database
    /// (every test server has its own) go on at the same time.
    var changeLock: PostgresQuery {
        var query = BoundSQL("SELECT pg_advisory_xact_lock(7400117, hashtext(")
        query.append(query.bind(name) + "))")
        return query.query
    }

    func literal(_ text: String) -> String { "'" + text.replacingASCII(UInt8(ascii: "'"), with: "''") + "'" }
}

extension JSONValue {
    /// Whether a string or key anywhere in the value holds U+0000, which PostgreSQL's text and
    /// `jsonb` cannot store.
    var containsNUL: Bool {
        var pending = [self]
        while let value = pending.popLast() {
            switch value {
            case .string(let string): if string.utf8.contains(0) { return true }
            case .array(let elements): pending += elements
            case .object(let object):
                for (key, member) in object {
                    if key.utf8.contains(0) { return true }
                    pending.append(member)
                }
            case .number, .bool, .null: continue
            }
        }
        return false
    }
}
