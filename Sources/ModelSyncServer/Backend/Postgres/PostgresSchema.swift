import Foundation
import ModelSyncCore
import ModelSyncJSON
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
///   table) and singular resources (with their value).
/// - `modelsync_records_<n>`, one per collection: `row_id` (a bigint identity: the list order),
///   `id_text` (the record's id as text, unique: routes and filters compare ids as text),
///   `version` (the sequence value of its last write, unique: the feed's index) and `record`
///   (`jsonb`).
/// - `modelsync_all_records`: a view of every collection table, named by table, so that a read
///   by id is one statement whose text never changes: each connection prepares it once (its
///   `search_path` is the schema).
/// - `modelsync_tombstones`: deleted records, kept for the feed limits.
/// - `modelsync_idempotency_keys`: the keys of creates and their first answers.
/// - `modelsync_text(jsonb)`: a value as the text filters compare (json-server's rules).
/// - `modelsync_highest_id(regclass, integer, bigint)`: a collection's highest integer id, read
///   afresh (a volatile function's query takes a new snapshot): called once the statement that
///   creates holds the state row's lock, it sees every create committed before.
struct PostgresSchema: Sendable {
    let name: String
    // Quoted once: nearly every statement names one of these.
    let quoted: String
    let state: String
    let resources: String
    let tombstones: String
    let idempotencyKeys: String
    let textFunction: String
    let allRecords: String
    let highestIDFunction: String
    /// The `NOTIFY` channel of this schema's writes.
    let channel: String

    init(name: String) {
        self.name = name
        quoted = quotePostgres(name)
        state = quoted + ".modelsync_state"
        resources = quoted + ".modelsync_resources"
        tombstones = quoted + ".modelsync_tombstones"
        idempotencyKeys = quoted + ".modelsync_idempotency_keys"
        textFunction = quoted + ".modelsync_text"
        allRecords = quoted + ".modelsync_all_records"
        highestIDFunction = quoted + ".modelsync_highest_id"
        channel = "modelsync_changes_" + name
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
                table_name text UNIQUE, value jsonb)
            """,
            "CREATE TABLE \(tombstones) (sequence bigint PRIMARY KEY, collection text NOT NULL, id jsonb NOT NULL, at timestamptz NOT NULL)",
            "CREATE INDEX ON \(tombstones) (at)",
            """
            CREATE TABLE \(idempotencyKeys) (
                key text PRIMARY KEY, collection text NOT NULL, request jsonb NOT NULL, response jsonb NOT NULL, at timestamptz NOT NULL)
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
        ]
    }

    /// The function behind ``highestIDFunction``; `lockTaken` only orders the call after the
    /// statement's update of the state row. Fails with 22003 when `creates` new ids would pass
    /// `Int.max`.
    var highestIDCreation: String {
        """
        CREATE FUNCTION \(highestIDFunction)(target regclass, creates integer, lock_taken bigint) RETURNS numeric
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE top numeric;
        BEGIN
            EXECUTE format('SELECT greatest(trunc(coalesce(max(integer_id), 0)), 0) FROM %s', target) INTO top;
            IF top + creates > 9223372036854775807 THEN
                RAISE EXCEPTION 'no free integer id above %', top USING ERRCODE = 'numeric_value_out_of_range';
            END IF;
            RETURN top;
        END $$
        """
    }

    /// The statements that create one collection's table.
    func collectionTable(_ table: String) -> [String] {
        [
            """
            CREATE TABLE \(self.table(table)) (
                row_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                id_text text UNIQUE, version bigint NOT NULL UNIQUE, record jsonb NOT NULL,
                integer_id numeric GENERATED ALWAYS AS (
                    CASE WHEN jsonb_typeof(record -> 'id') = 'number' THEN
                        CASE WHEN (record -> 'id')::numeric = trunc((record -> 'id')::numeric) THEN (record -> 'id')::numeric END
                    END) STORED)
            """,
            // The next free id is the highest integer id + 1: one step down this index.
            "CREATE INDEX ON \(self.table(table)) (integer_id)",
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
            """
            DO $$
            DECLARE t text;
            BEGIN
                IF to_regclass(\(literal(quoted + ".modelsync_resources"))) IS NOT NULL THEN
                    FOR t IN SELECT table_name FROM \(resources) WHERE table_name IS NOT NULL LOOP
                        EXECUTE format('DROP TABLE IF EXISTS %I.%I', \(literal(name)), t);
                    END LOOP;
                END IF;
            END $$
            """,
            "DROP TABLE IF EXISTS \(state), \(resources), \(tombstones), \(idempotencyKeys)",
            "DROP FUNCTION IF EXISTS \(textFunction)(jsonb)",
            "DROP FUNCTION IF EXISTS \(highestIDFunction)(regclass, integer, bigint)",
        ]
    }

    private func literal(_ text: String) -> String { "'" + text.replacingASCII(UInt8(ascii: "'"), with: "''") + "'" }
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
