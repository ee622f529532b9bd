import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Every hook call, in order, shared by the tests of one suite (they run one at a time).
private let hookLog = Locked<[String]>([])

struct WriteRefused: Error, Equatable {
    var title: String
}

/// A model whose hooks log their calls, refuse titles starting with "forbidden", fill in a
/// slug, and write an audit row.
@Model(table: "hooked_documents")
struct HookedDocument: SQLModel, Equatable {
    var id: Int?
    var title: String
    var slug: String = ""

    mutating func willInsert(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("willInsert \(title)") }
        if title.hasPrefix("forbidden") { throw WriteRefused(title: title) }
        slug = title.lowercased().replacingOccurrences(of: " ", with: "-")
        try db.execute("INSERT INTO hook_audit (event) VALUES (?)", [.text("insert \(title)")])
    }

    func didInsert(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("didInsert \(id ?? -1)") }
        if title == "fails after" { throw WriteRefused(title: title) }
    }

    mutating func willUpdate(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("willUpdate \(title)") }
        if title.hasPrefix("forbidden") { throw WriteRefused(title: title) }
        slug = title.lowercased().replacingOccurrences(of: " ", with: "-")
    }

    func didUpdate(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("didUpdate \(title)") }
    }

    func willDelete(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("willDelete \(title)") }
        if title == "keep me" { throw WriteRefused(title: title) }
    }

    func didDelete(_ db: SQLiteConnection) throws {
        hookLog.withLock { $0.append("didDelete \(title)") }
    }
}

extension HookedDocument: Validatable {
    static let validator = Validator<HookedDocument> {
        Validate(\.title, .required("Enter a title"))
    }
}

private func openHookDatabase(_ store: TestStorage) throws -> Database {
    var migrations = Migrator()
    migrations.registerSQL("audit", "CREATE TABLE hook_audit (id INTEGER PRIMARY KEY, event TEXT NOT NULL)")
    return try store.open(models: [HookedDocument.self], migrations: migrations)
}

private func takeLog() -> [String] {
    hookLog.withLock { log in
        defer { log = [] }
        return log
    }
}

@Suite("SQLite: lifecycle hooks", .serialized)
struct LifecycleHookTests {
    @Test(arguments: TestStorage.allCases)
    func hooksRunAroundInsertUpdateAndDelete(store: TestStorage) throws {
        let db = try openHookDatabase(store)
        _ = takeLog()
        var document = HookedDocument(title: "First Draft")
        try db.write { try document.insert($0) }
        #expect(takeLog() == ["willInsert First Draft", "didInsert 1"])
        #expect(document.slug == "first-draft")                 // the will-hook's change is written and handed back
        #expect(try db.read { try HookedDocument.find(1, $0) } == document)

        document.title = "Second Draft"
        try db.write { try document.save($0) }
        #expect(takeLog() == ["willUpdate Second Draft", "didUpdate Second Draft"])
        #expect(document.slug == "second-draft")
        try db.write { try document.update($0) }
        #expect(takeLog() == ["willUpdate Second Draft", "didUpdate Second Draft"])

        #expect(try db.write { try document.delete($0) })
        #expect(takeLog() == ["willDelete Second Draft", "didDelete Second Draft"])
        // No row: the will-hook runs, the did-hook does not.
        #expect(try db.write { try document.delete($0) } == false)
        #expect(takeLog() == ["willDelete Second Draft"])
        #expect(try db.read { try $0.scalar("SELECT group_concat(event, ', ') FROM hook_audit") } == .text("insert First Draft"))
    }

    @Test(arguments: TestStorage.allCases)
    func aWillHookRefusesTheWriteWithItsOwnError(store: TestStorage) throws {
        let db = try openHookDatabase(store)
        var forbidden = HookedDocument(title: "forbidden words")
        #expect(throws: WriteRefused(title: "forbidden words")) { try db.write { try forbidden.insert($0) } }
        #expect(forbidden.id == nil && forbidden.slug == "")
        #expect(try db.read { try HookedDocument.count($0) } == 0)

        var document = HookedDocument(title: "Fine")
        try db.write { try document.insert($0) }
        var edited = document
        edited.title = "forbidden edit"
        #expect(throws: WriteRefused(title: "forbidden edit")) { try db.write { try edited.save($0) } }
        #expect(throws: WriteRefused(title: "forbidden edit")) { try db.write { try edited.update($0, only: [\.title]) } }
        var keep = document
        keep.title = "keep me"
        try db.write { try keep.update($0) }
        #expect(throws: WriteRefused(title: "keep me")) { try db.write { _ = try keep.delete($0) } }
        #expect(try db.read { try HookedDocument.all($0) }.map(\.title) == ["keep me"])

        // In a batch: the refused model's error, unchanged, and nothing of the batch (nor of
        // what the hooks wrote) is kept.
        var batch = [HookedDocument(title: "One"), HookedDocument(title: "forbidden two")]
        #expect(throws: WriteRefused(title: "forbidden two")) { try db.write { try HookedDocument.saveAll(&batch, $0) } }
        #expect(throws: WriteRefused(title: "forbidden two")) { try db.write { try HookedDocument.insertAll(&batch, $0) } }
        #expect(batch.allSatisfy { $0.id == nil })
        #expect(try db.read { try HookedDocument.count($0) } == 1)
        #expect(try db.read { try $0.scalar("SELECT count(*) FROM hook_audit") } == .integer(1))
    }

    @Test(arguments: TestStorage.allCases)
    func aFailingDidHookRollsTheTransactionBack(store: TestStorage) throws {
        let db = try openHookDatabase(store)
        var document = HookedDocument(title: "fails after")
        #expect(throws: WriteRefused(title: "fails after")) { try db.write { try document.insert($0) } }
        #expect(try db.read { try HookedDocument.count($0) } == 0)
        #expect(try db.read { try $0.scalar("SELECT count(*) FROM hook_audit") } == .integer(0))
    }

    @Test func validationRunsBeforeTheHooks() throws {
        let db = try openHookDatabase(.memory)
        _ = takeLog()
        var invalid = HookedDocument(title: " ")
        #expect(throws: ValidationError.self) { try db.write { try invalid.insert($0) } }
        #expect(takeLog().isEmpty)
        // validate: false skips validation, not the hooks.
        try db.write { try invalid.insert($0, validate: false) }
        #expect(takeLog() == ["willInsert  ", "didInsert 1"])
    }

    @Test func batchesAndConflictClausesRunTheHooksUpsertsDoNot() throws {
        let db = try openHookDatabase(.memory)
        _ = takeLog()
        var batch = [HookedDocument(title: "A"), HookedDocument(title: "B")]
        _ = try db.write { try HookedDocument.insertAll(&batch, $0) }
        #expect(takeLog() == ["willInsert A", "willInsert B", "didInsert 1", "didInsert 2"])
        #expect(batch.map(\.slug) == ["a", "b"])
        try db.write { try HookedDocument.saveAll(&batch, $0) }
        #expect(takeLog() == ["willUpdate A", "didUpdate A", "willUpdate B", "didUpdate B"])

        var clash = HookedDocument(id: 1, title: "C")
        #expect(try db.write { try clash.insert($0, onConflict: .ignore) } == false)
        #expect(takeLog() == ["willInsert C"])                  // skipped: no did-hook
        // A save of a key without a row: the update hooks run first, then the insert's.
        var fresh = HookedDocument(id: 10, title: "D")
        try db.write { try fresh.save($0) }
        #expect(takeLog() == ["willUpdate D", "willInsert D", "didInsert 10"])

        // Upserts store values as given (what sync and the cache write): no hooks.
        let upserted = HookedDocument(id: 11, title: "E", slug: "as-given")
        try db.write { try upserted.upsert($0) }
        #expect(takeLog().isEmpty)
        #expect(try db.read { try HookedDocument.find(11, $0) }?.slug == "as-given")
    }
}
