import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Issue #38: SQL cannot hold a NUL in an identifier (SQLite's tokenizer stops there), so a
/// table or column named with one failed in every statement with "unrecognized token". It is a
/// typed error naming the identifier, at open, or where a raw name enters a statement.
@Suite("SQLite: identifiers SQL cannot express")
struct IdentifierTests {
    @Model(table: "bad\u{0}table")
    struct BadTable: SQLModel {
        var id: Int?
        var name: String
    }

    @Model(table: "bad_columns")
    struct BadColumn: SQLModel {
        var id: Int?
        @Column("note\u{0}text") var note: String
    }

    private func invalidName(_ body: () throws -> Void) -> String? {
        do {
            try body()
        } catch let error as SQLiteError {
            guard case .invalidIdentifier(let name) = error.kind else {
                Issue.record("expected invalidIdentifier, got \(error)")
                return nil
            }
            return name
        } catch {
            Issue.record("expected a SQLiteError, got \(error)")
            return nil
        }
        Issue.record("no error")
        return nil
    }

    @Test(arguments: TestStorage.allCases)
    func aModelWithANULInItsTableOrColumnIsRefusedAtOpen(store: TestStorage) {
        #expect(invalidName { _ = try store.open(models: [BadTable.self]) } == "bad\u{0}table")
        #expect(invalidName { _ = try store.open(models: [BadColumn.self]) } == "note\u{0}text")
    }

    @Test func aModelWithANULIsRefusedOnFirstUseAndInQueries() throws {
        let db = try TestStorage.memory.open()
        var row = BadTable(name: "x")
        #expect(invalidName { try db.write { try row.insert($0) } } == "bad\u{0}table")
        #expect(invalidName { _ = try db.read { try BadTable.all().fetchAll($0) } } == "bad\u{0}table")
        #expect(invalidName { _ = try db.read { try BadColumn.where { $0.note == "x" }.fetchAll($0) } } == "note\u{0}text")
        #expect(invalidName { _ = try db.write { try BadTable.all().deleteAll($0) } } == "bad\u{0}table")
    }

    @Test func migrationHelpersRefuseANULInANewName() throws {
        let db = try TestStorage.memory.open()
        try db.write { try $0.execute("CREATE TABLE plain (id INTEGER PRIMARY KEY, name TEXT)") }
        #expect(invalidName { try db.write { try $0.renameTable("plain", to: "re\u{0}named") } } == "re\u{0}named")
        #expect(invalidName { try db.write { try $0.addColumn("ad\u{0}ded", to: "plain", type: "TEXT") } } == "ad\u{0}ded")
        #expect(invalidName { try db.write { try $0.renameColumn("name", to: "na\u{0}me", in: "plain") } } == "na\u{0}me")
        #expect(invalidName { try db.write { try $0.dropColumn("na\u{0}me", from: "plain") } } == "na\u{0}me")
        // Nothing changed.
        #expect(try db.read { try $0.columns(of: "plain").map(\.name) } == ["id", "name"])
    }

    @Test func theMessageShowsTheNUL() throws {
        let error = try #require(throws: SQLiteError.self) { _ = try TestStorage.memory.open(models: [BadTable.self]) }
        #expect(error.message.contains(#""bad\0table""#))
    }
}
