import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer


/// The data in one SQLite file (see `SQLiteSchema` for the tables), on the package's own
/// SQLite layer:
///
/// - WAL, and `synchronous = FULL` by default: a write is answered once its transaction is
///   committed and synced, so it survives `kill -9` and power loss.
/// - One writer (`SQLiteWriter`): writes that arrive while another commits queue up and commit
///   together, one transaction and one sync for the group.
/// - Reads run on a pool of reader connections, in parallel with each other and with the writer.
///   The work a request chooses (filters, `q`, `_like` with the linear-time `LikePattern`)
///   runs there, never on the writer.
/// - Records are looked up by id, and owner checks made, through indexes; under sharing rules,
///   a user's memberships through an expression index on the membership collection's user field
///   and the rows a membership moves through one on their parent field (made at start), and
///   lists leave out in SQL the rows the rule refuses; the feed reads by the version index.
/// - A lock file beside the database (`<file>-server.lock`) keeps a second server off the file.
public final class SQLiteBackend: ServerBackend {
    let database: Database
    let logger: Logger
    let feedLimits: FeedLimits
    /// The data `reset()` puts back: what the server was started with, when it was.
    let initialData: JSONValue?
    /// The top-level names, read at start and after a reset or import (only those change them).
    let resources: Locked<[String: ResourceKind]>
    let writer: SQLiteWriter
    let streams: ChangeStreams
    private let lock: FileLock
    /// Lists take turns on all but one of the readers (at most one fewer than the cores): a
    /// read by id always finds one.
    let costlyReads = CostlyReads(width: min(CostlyReads.defaultWidth, SQLiteBackend.readers - 1))
    /// The reader connections.
    static let readers = 4

    /// The file's path.
    public let path: String

    /// How SQLite syncs commits (`PRAGMA synchronous`).
    public enum Durability: String, Sendable {
        /// Every commit is synced before it is answered (`FULL`, the default): it survives
        /// `kill -9` and power loss.
        case full = "FULL"
        /// Commits are synced at checkpoints (`NORMAL`): they survive `kill -9`, but the last
        /// ones before a power loss may be lost. Faster on disks whose sync is slow.
        case normal = "NORMAL"
    }

    /// Opens (creating it when missing) the SQLite file at `path`: takes its lock, checks it
    /// (`PRAGMA quick_check`), migrates the bookkeeping, makes the indexes the sharing rules of
    /// `rules` read and, with `initialData`, replaces the data with it.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/couldNotStart(_:)`` when another server holds
    ///   the file, ``/ModelSyncServer/ServerError/unreadableFile(path:reason:)`` when it is no
    ///   SQLite database or fails its check.
    static func open(
        path: String, initialData: JSONValue?, feedLimits: FeedLimits, durability: Durability = .full, rules: AccessRules? = nil, logger: Logger
    ) async throws -> SQLiteBackend {
        // Opening reads and checks the whole file: on a thread of its own, off Swift's pool.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SQLiteBackend, any Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try openNow(path: path, initialData: initialData, feedLimits: feedLimits, durability: durability, rules: rules, logger: logger)
                })
            }
        }
    }

    private static func openNow(
        path: String, initialData: JSONValue?, feedLimits: FeedLimits, durability: Durability, rules: AccessRules?, logger: Logger
    ) throws -> SQLiteBackend {
        let lock = try FileLock(path: path + "-server.lock")
        removeStaleBackups(of: path, logger: logger)
        do {
            let database: Database
            do {
                database = try Database(
                    path: path,
                    configuration: DatabaseConfiguration(
                        busyTimeout: 5, foreignKeys: false, maximumReaders: SQLiteBackend.readers, createsTables: false, functions: [SQLiteSchema.emailFunction] + ListSQL.functions))
                try database.writeWithoutTransaction { connection in
                    let check = try connection.rows("PRAGMA quick_check").compactMap { $0.first?.textValue }
                    guard check == ["ok"] else { throw ServerError.unreadableFile(path: path, reason: "PRAGMA quick_check: " + check.joined(separator: "; ")) }
                    try connection.execute("PRAGMA synchronous = \(durability.rawValue)")
                    try SQLiteSchema.migrator.migrate(connection)
                    try createSharingIndexes(for: rules, connection)
                    if let rules { try connection.execute(SQLiteSchema.emailIndex(on: rules.accountsCollection)) }
                }
            } catch let error as ServerError {
                throw error
            } catch {
                throw ServerError.unreadableFile(path: path, reason: "\(error)")
            }
            if let initialData {
                try database.write { connection in try Self.replaceData(with: initialData, connection) }
            }
            let resources = try database.read { try Self.readResources($0) }
            return SQLiteBackend(
                database: database, path: path, lock: lock, logger: logger, feedLimits: feedLimits, initialData: initialData, resources: resources)
        } catch {
            lock.release()
            throw error
        }
    }

    private init(
        database: Database, path: String, lock: FileLock, logger: Logger, feedLimits: FeedLimits, initialData: JSONValue?,
        resources: [String: ResourceKind]
    ) {
        self.database = database
        self.path = path
        self.lock = lock
        self.logger = logger
        self.feedLimits = feedLimits
        self.initialData = initialData
        self.resources = Locked(resources)
        let streams = ChangeStreams()
        self.streams = streams
        self.writer = SQLiteWriter(database: database, publish: { streams.publish($0) })
    }

    /// The start of the names of the copies ``backupFile()`` makes beside the file at `path`.
    static func backupPrefix(of path: String) -> String {
        ".\(URL(fileURLWithPath: path).lastPathComponent).backup-"
    }

    /// Removes the copies a server stopped while sending them left beside the file (the one
    /// serving it, which holds its lock, makes them and deletes each once sent).
    private static func removeStaleBackups(of path: String, logger: Logger) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        let prefix = backupPrefix(of: path)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            do {
                try FileManager.default.removeItem(at: directory.appendingPathComponent(name))
                logger.notice("removed a backup copy left by a stopped server", metadata: ["file": "\(name)"])
            } catch {
                logger.warning("could not remove a backup copy left by a stopped server", metadata: ["file": "\(name)", "error": "\(error)"])
            }
        }
    }

    static func readResources(_ connection: SQLiteConnection) throws -> [String: ResourceKind] {
        var resources: [String: ResourceKind] = [:]
        for row in try connection.rows("SELECT name, kind FROM \(SQLiteSchema.resources)") {
            guard let name = row[0].textValue else { continue }
            switch row[1].textValue {
            case "collection": resources[name] = .collection
            case "singular": resources[name] = .singular
            default: continue
            }
        }
        return resources
    }

    /// An error of SQLite as a request's answer: a 500 that names SQLite (nothing was changed).
    static func requestError(_ error: any Error) -> any Error {
        if error is APIError || error is ServerError || error is CancellationError { return error }
        return APIError(status: 500, message: "SQLite: \(error)")
    }

    /// Runs `body` on a reader: one committed snapshot, in parallel with other reads and the writer.
    func reading<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        do {
            return try await database.read(body)
        } catch {
            throw Self.requestError(error)
        }
    }

    // MARK: Reads

    package func resource(named name: String) -> ResourceKind? {
        resources.current[name]
    }

    package func resourceKinds() -> [String: ResourceKind] {
        resources.current
    }

    /// A copy beside the file (`VACUUM INTO`, one snapshot, no write lock), for
    /// `GET /_admin/backup`: on the data's own disk, which has room for it, rather than in a
    /// temporary directory that may be memory.
    package func backupFile() async throws -> URL? {
        let file = URL(fileURLWithPath: path)
        let copy = file.deletingLastPathComponent().appendingPathComponent(Self.backupPrefix(of: path) + UUID().uuidString)
        do {
            try await SyncServer.backUp(sqlite: path, to: copy.path)
        } catch {
            try? FileManager.default.removeItem(at: copy)
            logger.error("the backup of \(path) failed: \(error)")
            throw APIError(status: .internalServerError, message: "the backup failed; the server's log says why")
        }
        return copy
    }

    /// On a reader, in turn with the other lists (``CostlyReads``): without the bound, clients
    /// sending costly filters held every reader, and a read by id waited for one.
    package func list(_ collection: String, _ request: ListRequest) async throws -> ListPage {
        try await costlyReads.run { try await reading { connection in try Self.list(collection, request, connection) } }
    }

    private static func list(_ collection: String, _ request: ListRequest, _ connection: SQLiteConnection) throws -> ListPage {
        try requireCollection(collection, connection)
        let modified = try self.modified(connection)
        var query = request.query
        let visibility = request.visibility
        // Parents and memberships looked up by their indexes, once each for the request.
        let facts = RowFacts.sqlite(connection)
        if let owner = request.owner {
            // The parent by its id (an index), and only when the reader may view it.
            try requireCollection(owner.collection, connection)
            guard let parent = try record(owner.collection, id: owner.id, connection), try visibility.viewableRows(of: owner.collection).admits(parent.record, facts) else {
                throw APIError.missing(owner.collection, owner.id)
            }
            query.require(foreignKey(of: owner.collection), equals: owner.id)
        }
        let rows = visibility.rows(of: collection)
        let filters = !query.equal.isEmpty || !query.conditions.isEmpty || query.search != nil
        let total: Int
        let slice: ModelSyncServer.Slice
        var page: [JSONValue] = []
        if !filters && query.sort.isEmpty && rows == .everything {
            // A page of the data in order: counted and sliced in SQL, only the page read.
            total = Int(try connection.scalar("SELECT count(*) FROM \(SQLiteSchema.records) WHERE collection = ?", [.text(collection)])?.integerValue ?? 0)
            slice = try request.slice(count: total)
            if !slice.range.isEmpty {
                try connection.withStatement(
                    "SELECT record FROM \(SQLiteSchema.records) WHERE collection = ? ORDER BY row_id LIMIT ? OFFSET ?",
                    [.text(collection), .integer(Int64(slice.range.count)), .integer(Int64(slice.range.lowerBound))]
                ) { statement in
                    while try statement.step() { page.append(try parsed(statement.value(at: 0))) }
                }
            }
        } else {
            // Filtered, searched and sorted in SQL (``ListSQL``), counted in one pass that keeps
            // only the rows of the page: memory does not grow with the collection.
            let found = try matching(collection, query, rows, window: try request.slice(count: Int.max / 4).range, facts, connection)
            total = found.total
            slice = try request.slice(count: total)
            page = found.items.filter { slice.range.contains($0.index) }.map(\.item)
        }
        let items = try embed(page, of: collection, embeds: request.embeds, expands: request.expands, visibility, facts, connection)
        return ListPage(items: items, total: total, slice: slice, modified: modified)
    }

    /// The statement of a list: each matching row's `row_id`, whether SQL vouches for the access
    /// rule (1; then Swift reads no record to check it, an owner's row included), and
    /// `columns`, in `order`.
    static func listStatement(_ collection: String, _ query: ListQuery, _ rows: RowFilter, columns: [SQLPart], order: SQLPart) -> SQLPart {
        var sureArguments: [SQLValue] = []
        let sure = rows == .everything ? "1" : SharingSQL.vouch(rows, row: "listed", &sureArguments)
        var select = SQLPart("SELECT row_id, \(sure)", sureArguments)
        for column in columns { select = select + ", " + column }
        select = select + SQLPart(" FROM \(SQLiteSchema.records) AS listed WHERE collection = ?", [.text(collection)])
        if rows != .everything {
            var arguments: [SQLValue] = []
            select = select + SQLPart(" AND " + SharingSQL.condition(rows, &arguments), arguments)
        }
        return select + " AND " + ListSQL.condition(query) + " ORDER BY " + order
    }

    /// The rows of `collection` that `query` and the access rule `rows` keep, counted, in the
    /// query's order; only those at the positions in `window` are read into values. One pass
    /// over a statement that SQL filters and sorts (SQLite's sorter spills to a temporary file,
    /// not memory); a row SQL does not vouch the rule for is read and checked here. When a sort
    /// field holds numbers in some matching rows and other values in others, the JSON file's
    /// comparison is no order SQL can sort by: a second pass reads the rows' sort values alone
    /// and sorts them as ``/ModelSyncServer/ListQuery`` does.
    private static func matching(
        _ collection: String, _ query: ListQuery, _ rows: RowFilter, window: Range<Int>, _ facts: RowFacts, _ connection: SQLiteConnection
    ) throws -> (total: Int, items: [(index: Int, item: JSONValue)]) {
        func statement(columns: [SQLPart], order: SQLPart) -> SQLPart {
            listStatement(collection, query, rows, columns: columns, order: order)
        }
        func admitted(_ statement: SQLStatement, rowID: Int64) throws -> (Bool, JSONValue?) {
            guard statement.value(at: 1).integerValue != 1 else { return (true, nil) }
            guard let record = try connection.scalar("SELECT record FROM \(SQLiteSchema.records) WHERE row_id = ?", [.integer(rowID)]) else { return (false, nil) }
            let item = try parsed(record)
            return (try rows.admits(item, facts), item)
        }
        let fields = query.sort.map { ListSQL.location(of: $0.field) }
        var total = 0
        var kept: [(index: Int, rowID: Int64, item: JSONValue?)] = []
        var numbers = Array(repeating: false, count: fields.count), others = numbers
        let sorted = statement(columns: fields.map(ListSQL.isNumber), order: ListSQL.ordering(query, rows))
        try connection.withStatement(sorted.sql, sorted.arguments) { statement in
            while try statement.step() {
                let rowID = statement.value(at: 0).integerValue ?? 0
                let (admits, item) = try admitted(statement, rowID: rowID)
                guard admits else { continue }
                for position in fields.indices {
                    switch statement.value(at: 2 + position).integerValue {
                    case 1?: numbers[position] = true
                    case 0?: others[position] = true
                    default: break
                    }
                }
                if window.contains(total) { kept.append((total, rowID, item)) }
                total += 1
            }
        }
        if fields.indices.contains(where: { numbers[$0] && others[$0] }) {
            var entries: [(rowID: Int64, keys: [JSONValue?])] = []
            let unsorted = statement(columns: fields.map(ListSQL.json), order: SQLPart("row_id"))
            try connection.withStatement(unsorted.sql, unsorted.arguments) { statement in
                while try statement.step() {
                    let rowID = statement.value(at: 0).integerValue ?? 0
                    guard try admitted(statement, rowID: rowID).0 else { continue }
                    let keys = try fields.indices.map { position -> JSONValue? in
                        guard case .text(let text) = statement.value(at: 2 + position) else { return nil }
                        return try JSONValue(parsing: Array(text.utf8))
                    }
                    entries.append((rowID, keys))
                }
            }
            let order = query.sortedIndices(entries.map(\.keys))
            kept = window.clamped(to: 0..<order.count).map { index in (index, entries[order[index]].rowID, nil) }
        }
        // The page's records by their row ids (those not read for the rule's check).
        var records: [Int64: JSONValue] = [:]
        let missing = kept.filter { $0.item == nil }.map { JSONValue.number(JSONNumber($0.rowID)) }
        if !missing.isEmpty {
            try connection.withStatement(
                "SELECT row_id, record FROM \(SQLiteSchema.records) WHERE row_id IN (SELECT value FROM json_each(?))", [text(.array(missing))]
            ) { statement in
                while try statement.step() { records[statement.value(at: 0).integerValue ?? 0] = try parsed(statement.value(at: 1)) }
            }
        }
        return (total, kept.compactMap { entry in (entry.item ?? records[entry.rowID]).map { (entry.index, $0) } })
    }

    package func item(_ collection: String, id: String, embeds: [String], expands: [String], visibility: Visibility) async throws -> ItemRead {
        try await reading { connection in
            try Self.requireCollection(collection, connection)
            // A row the reader may not view is missing to it: its existence is not revealed.
            let facts = RowFacts.sqlite(connection)
            guard let found = try Self.record(collection, id: id, connection), try visibility.viewableRows(of: collection).admits(found.record, facts) else {
                throw APIError.missing(collection, id)
            }
            let value = try Self.embed([found.record], of: collection, embeds: embeds, expands: expands, visibility, facts, connection)[0]
            return ItemRead(value: value, version: found.version, modified: try Self.modified(connection))
        }
    }

    package func singular(_ name: String) async throws -> (value: JSONValue, modified: Date)? {
        try await reading { connection in
            guard let value = try connection.scalar("SELECT value FROM \(SQLiteSchema.resources) WHERE kind = 'singular' AND name = ?", [.text(name)]) else {
                return nil
            }
            return (try Self.parsed(value), try Self.modified(connection))
        }
    }

    package func everything() async throws -> (value: JSONValue, modified: Date) {
        try await reading { connection in (.object(try Self.everything(connection)), try Self.modified(connection)) }
    }

    /// Every top-level member in the data's order.
    static func everything(_ connection: SQLiteConnection) throws -> JSONObject {
        var root = JSONObject()
        for member in try connection.rows("SELECT name, kind, value FROM \(SQLiteSchema.resources) ORDER BY position") {
            guard let name = member[0].textValue else { continue }
            if member[1].textValue == "collection" {
                var items: [JSONValue] = []
                try connection.withStatement("SELECT record FROM \(SQLiteSchema.records) WHERE collection = ? ORDER BY row_id", [.text(name)]) { statement in
                    while try statement.step() { items.append(try parsed(statement.value(at: 0))) }
                }
                root[name] = .array(items)
            } else {
                root[name] = try parsed(member[2])
            }
        }
        return root
    }

    // MARK: Helpers

    /// An SQL condition that keeps every record whose value at the dotted `field` has one of the
    /// `accepted` texts (``ListQuery``'s rule: the value's ``/ModelSyncServer/scalarText(_:)``),
    /// and leaves out most others: a string must be one of them, an integer's digits too (but
    /// for zero, which JSON may spell `-0`); any other value is kept for the exact check in
    /// Swift. Nil for a field no JSON path of SQLite spells (a `"`, an empty key, NUL).
    static func equality(at field: String, oneOf accepted: [String], _ arguments: inout [SQLValue]) -> String? {
        let keys = field.split(separator: ".")
        guard !keys.isEmpty, !keys.contains(where: { $0.contains("\"") || $0.utf8.contains(0) }) else { return nil }
        let path = SQLValue.text("$" + keys.map { ".\"\($0)\"" }.joined())
        let texts = text(.array(accepted.map(JSONValue.string)))
        arguments += [path, path, texts, path, texts, path]
        return """
            (CASE json_type(record, ?) WHEN 'text' THEN json_extract(record, ?) IN (SELECT value FROM json_each(?)) \
            WHEN 'integer' THEN (CAST(json_extract(record, ?) AS TEXT) IN (SELECT value FROM json_each(?)) OR json_extract(record, ?) = 0) \
            ELSE 1 END)
            """
    }

    /// Throws a 404 unless `name` is a collection.
    static func requireCollection(_ name: String, _ connection: SQLiteConnection) throws {
        guard try connection.scalar("SELECT 1 FROM \(SQLiteSchema.resources) WHERE name = ? AND kind = 'collection'", [.text(name)]) != nil else {
            throw APIError.notFound("no collection named \(name)")
        }
    }

    /// A record by id (its bytes, through the index): its row, version, value and create's key.
    static func record(_ collection: String, id: String, _ connection: SQLiteConnection) throws -> (rowID: Int64, version: Int, record: JSONValue, createdWith: String?)? {
        try connection.withStatement(
            "SELECT row_id, version, record, created_with FROM \(SQLiteSchema.records) WHERE collection = ? AND id_text = ?", [.text(collection), .text(id)]
        ) { statement in
            guard try statement.step() else { return nil }
            return (
                statement.value(at: 0).integerValue ?? 0, Int(statement.value(at: 1).integerValue ?? 0), try parsed(statement.value(at: 2)),
                statement.value(at: 3).textValue
            )
        }
    }

    /// When the data last changed.
    static func modified(_ connection: SQLiteConnection) throws -> Date {
        Date(timeIntervalSince1970: TimeInterval(try connection.scalar("SELECT modified FROM \(SQLiteSchema.state)")?.integerValue ?? 0))
    }

    /// JSON text of a column as a value.
    static func parsed(_ value: SQLValue) throws -> JSONValue {
        guard let text = value.textValue else { return .null }
        return try JSONValue(parsing: Array(text.utf8))
    }

    /// A value as the JSON text a column holds.
    static func text(_ value: JSONValue) -> SQLValue {
        .text(String(decoding: value.jsonBytes(), as: UTF8.self))
    }

    /// Adds `_embed` children (by `<singular>Id`) and `_expand` parents (from `<name>s`), each
    /// relation only with the rows its own collection's rule admits.
    static func embed(
        _ items: [JSONValue], of name: String, embeds: [String], expands: [String], _ visibility: Visibility, _ facts: RowFacts,
        _ connection: SQLiteConnection
    ) throws -> [JSONValue] {
        guard !embeds.isEmpty || !expands.isEmpty else { return items }
        let key = foreignKey(of: name)
        let ids = Set(items.compactMap(recordID(of:)).map(ExactText.init))
        var children: [(key: String, byOwner: [ExactText: [JSONValue]])] = []
        for child in embeds {
            try requireCollection(child, connection)
            let rows = visibility.rows(of: child)
            var byOwner: [ExactText: [JSONValue]] = [:]
            // The children whose key is one of the page's ids (SQL leaves out most others).
            var arguments: [SQLValue] = [.text(child)]
            // (A key with a dot is a member's name here, not a path.)
            let condition = key.contains(".") ? "" : equality(at: key, oneOf: ids.map(\.text), &arguments).map { " AND " + $0 } ?? ""
            try connection.withStatement("SELECT record FROM \(SQLiteSchema.records) WHERE collection = ?\(condition) ORDER BY row_id", arguments) { statement in
                while try statement.step() {
                    let record = try parsed(statement.value(at: 0))
                    guard let owner = record[key].flatMap(scalarText).map(ExactText.init), ids.contains(owner), try rows.admits(record, facts) else { continue }
                    byOwner[owner, default: []].append(record)
                }
            }
            children.append((child, byOwner))
        }
        var parents: [(key: String, byID: [ExactText: JSONValue])] = []
        for parent in expands {
            let kinds = try readResources(connection)
            let parentName = kinds[parent + "s"] == .collection ? parent + "s" : parent
            guard kinds[parentName] == .collection else { throw APIError.cannotExpand(parent) }
            let rows = visibility.rows(of: parentName)
            var byID: [ExactText: JSONValue] = [:]
            for wanted in Set(items.compactMap { $0[parent + "Id"].flatMap(scalarText) }) {
                if let found = try record(parentName, id: wanted, connection), try rows.admits(found.record, facts) { byID[ExactText(wanted)] = found.record }
            }
            parents.append((parent, byID))
        }
        return attachRelations(items, children: children, parents: parents)
    }

    package func close() async {
        streams.finish()
        await writer.finish()
        lock.release()
    }
}

/// An exclusive lock on a file (`flock`), held while a server serves the database beside it:
/// a second server on the same database is refused at start. The system releases it when the
/// process ends, however it ends.
final class FileLock: Sendable {
    private let descriptor: Locked<Int32>
    let path: String

    init(path: String) throws {
        self.path = path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ServerError.unreadableFile(path: path, reason: "cannot open the lock file: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another modelsync-server serves this database (it holds \(path))" : String(cString: strerror(errno))
            close(descriptor)
            throw ServerError.couldNotStart(reason)
        }
        self.descriptor = Locked(descriptor)
    }

    /// Releases the lock (again: nothing).
    func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            flock(descriptor, LOCK_UN)
            close(descriptor)
            descriptor = -1
        }
    }

    deinit { release() }
}
