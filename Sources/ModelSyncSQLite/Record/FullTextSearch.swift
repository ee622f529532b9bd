import Foundation
import ModelSyncCore

/// A full-text index over some of a model's text properties: an FTS5 table that reads its
/// text from the model's table (`content=`), kept in step by triggers on that table.
///
/// ```swift
/// extension Article {
///     static let search = FullTextIndex<Article>(\.title, \.body)
/// }
/// try db.write { try Article.search.create($0) }     // indexes the rows already there too
/// let hits = try db.read {
///     try Article.where(Article.search.matches(.words(userInput))).order(Article.search.rank(.words(userInput))).fetchAll($0)
/// }
/// ```
///
/// The index lives in the table `<table>_fts` (and three triggers): every insert, update and
/// delete of the model's table updates it, whichever API made it, raw SQL included. Rows that
/// `REPLACE` deletes count as deleted because ModelSync's connections run with
/// `PRAGMA recursive_triggers` on (turning it off in an open hook breaks the index on
/// `REPLACE`). Rows are matched by rowid, so the model's table must have one (not
/// `withoutRowID`).
///
/// An index created by an earlier version has a fourth trigger that recursive triggers make
/// remove a replaced row's words twice: call ``create(_:)`` again at launch, which drops it.
public struct FullTextIndex<Model: SQLModel>: Sendable {
    /// The indexed properties, by name.
    public let properties: [String]
    /// The FTS5 tokenizer.
    public let tokenizer: FullTextTokenizer

    /// An index of the text properties at `keyPaths`, split into words by `tokenizer`.
    public init(_ keyPaths: KeyPath<Model, String>..., tokenizer: FullTextTokenizer = .unicode61) {
        self.properties = keyPaths.map { Model.schema.field(for: $0)?.name ?? "\($0)" }
        self.tokenizer = tokenizer
    }

    /// The FTS5 table's name: the model's table name and `_fts`.
    public var tableName: String { Model.sqlTable.name + "_fts" }

    /// The indexed columns of the model's table, in declaration order of the key paths.
    private func columns() throws -> [String] {
        guard !properties.isEmpty else {
            throw SQLiteError.misuse("a full-text index of \(Model.schema.name) needs at least one property")
        }
        return try properties.map { name in
            guard let field = Model.schema.fields.first(where: { $0.name == name }) else {
                throw SQLiteError.misuse("\(name) is not a stored property of \(Model.schema.name)")
            }
            return field.column
        }
    }

    /// Creates the FTS5 table and its triggers (unless they exist), then indexes the rows the
    /// model's table already holds.
    public func create(_ db: SQLiteConnection) throws {
        guard !Model.schema.withoutRowID else {
            throw SQLiteError.misuse("a full-text index needs a rowid; \(Model.sqlTable.name) is WITHOUT ROWID")
        }
        let columns = try columns().map(checkedIdentifier)
        let fts = try checkedIdentifier(tableName)
        let table = try checkedIdentifier(Model.sqlTable.name)
        let list = columns.joined(separator: ", ")
        let new = columns.map { "new." + $0 }.joined(separator: ", ")
        let old = columns.map { "old." + $0 }.joined(separator: ", ")
        // The external-content pattern of SQLite's FTS5 documentation: to remove a row's words,
        // FTS5 is told its old text with the special 'delete' command.
        let removeOld = "INSERT INTO \(fts)(\(fts), rowid, \(list)) VALUES ('delete', old.rowid, \(old));"
        let addNew = "INSERT INTO \(fts)(rowid, \(list)) VALUES (new.rowid, \(new));"
        try db.transaction {
            try db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS \(fts) USING fts5(\(list), content=\(quoteLiteral(Model.sqlTable.name)), "
                    + "content_rowid='rowid', tokenize=\(quoteLiteral(tokenizer.specification)))")
            try db.execute("CREATE TRIGGER IF NOT EXISTS \(trigger("ai")) AFTER INSERT ON \(table) BEGIN \(addNew) END")
            try db.execute("CREATE TRIGGER IF NOT EXISTS \(trigger("ad")) AFTER DELETE ON \(table) BEGIN \(removeOld) END")
            try db.execute("CREATE TRIGGER IF NOT EXISTS \(trigger("au")) AFTER UPDATE ON \(table) BEGIN \(removeOld) \(addNew) END")
            // Earlier versions removed a replaced row's words in a BEFORE INSERT trigger, which
            // also ran for rows that `OR IGNORE` or an upsert then kept, and missed rows replaced
            // on another unique key. The delete trigger covers every replaced row now, since
            // connections run with recursive triggers on: the old trigger would remove the words twice.
            try db.execute("DROP TRIGGER IF EXISTS \(trigger("bi"))")
            try rebuild(db)
        }
    }

    /// Drops the FTS5 table and its triggers.
    public func drop(_ db: SQLiteConnection) throws {
        try db.transaction {
            for suffix in ["ai", "ad", "au", "bi"] { try db.execute("DROP TRIGGER IF EXISTS \(trigger(suffix))") }
            try db.execute("DROP TABLE IF EXISTS \(quoteIdentifier(tableName))")
        }
    }

    /// Indexes the model's table anew (after rows were written with the triggers dropped, say).
    public func rebuild(_ db: SQLiteConnection) throws {
        let fts = quoteIdentifier(tableName)
        try db.execute("INSERT INTO \(fts)(\(fts)) VALUES ('rebuild')")
    }

    /// The rows whose indexed text matches `query`.
    public func matches(_ query: FullTextQuery) -> SQLCondition<Model> {
        SQLCondition(node: .raw(SQLFragment("\(rowid) IN (SELECT rowid FROM \(matchClause))", [.text(query.text)])))
    }

    /// Best matches first (FTS5's `bm25` rank; lower is better). Rows that do not match sort last.
    public func rank(_ query: FullTextQuery) -> SQLOrdering<Model> {
        .sql("(SELECT rank FROM \(matchClause) AND rowid = \(rowid)) NULLS LAST", [.text(query.text)])
    }

    private var matchClause: String {
        "\(quoteIdentifier(tableName)) WHERE \(quoteIdentifier(tableName)) MATCH ?"
    }

    private var rowid: String { quoteIdentifier(Model.sqlTable.name) + ".rowid" }

    private func trigger(_ suffix: String) -> String { quoteIdentifier("\(tableName)_\(suffix)") }
}

/// How FTS5 splits text into words.
public struct FullTextTokenizer: Sendable, Equatable {
    /// The tokenizer's FTS5 specification, e.g. `unicode61 remove_diacritics 2`.
    public let specification: String

    /// Words of Unicode letters and digits, case-folded, diacritics removed.
    public static let unicode61 = FullTextTokenizer(specification: "unicode61 remove_diacritics 2")
    /// `unicode61` plus English stemming: "searching" finds "search".
    public static let porter = FullTextTokenizer(specification: "porter unicode61 remove_diacritics 2")
    /// Every run of three characters, so that any substring of three or more matches.
    public static let trigram = FullTextTokenizer(specification: "trigram")

    /// Any FTS5 tokenizer specification.
    public init(specification: String) {
        self.specification = specification
    }
}

/// A full-text query. User input goes through ``words(_:)``, ``phrase(_:)`` or ``prefix(_:)``,
/// which quote it so that no character of it is FTS5 syntax; ``raw(_:)`` passes the syntax as
/// written (`swift AND (sqlite OR grdb)`), and a syntax error in it is a ``SQLiteError``.
public struct FullTextQuery: Sendable, Equatable {
    /// The query in FTS5 syntax.
    public let text: String

    /// A query in FTS5's own syntax.
    public static func raw(_ query: String) -> FullTextQuery { FullTextQuery(text: query) }

    /// Rows holding every word of `text`, in any order.
    public static func words(_ text: String) -> FullTextQuery {
        FullTextQuery(text: text.split(whereSeparator: \.isWhitespace).map { quoted(String($0)) }.joined(separator: " "))
    }

    /// Rows holding `text` as a phrase: its words in this order.
    public static func phrase(_ text: String) -> FullTextQuery { FullTextQuery(text: quoted(text)) }

    /// Rows holding a word that starts with `text` (search as you type).
    public static func prefix(_ text: String) -> FullTextQuery { FullTextQuery(text: quoted(text) + " *") }

    /// An FTS5 string: in double quotes, a double quote doubled. NUL cannot be bound inside
    /// text that FTS5 reads, so it separates words like a space.
    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingASCII(UInt8(ascii: "\""), with: "\"\"").replacingASCII(0, with: " ") + "\""
    }
}
