import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Model
struct Ticket: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int64?
    var title: String
    var priority: Int = 1
}

extension Ticket: Validatable {
    static let validator = Validator<Ticket> {
        Validate(\.title, .required("Enter a title"))
        Validate(\.priority, .range(1...5))
    }
}

/// The error `body` throws, as a `ValidationError` (a test failure otherwise).
private func validationError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> ValidationError? {
    do {
        try body()
        Issue.record("expected a ValidationError", sourceLocation: sourceLocation)
    } catch let error as ValidationError {
        return error
    } catch {
        Issue.record("expected a ValidationError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("SQLite: saving validates first")
struct ValidationOnSaveTests {
    @Test(arguments: TestStorage.allCases)
    func noInvalidModelReachesTheTable(store: TestStorage) throws {
        let db = try store.open(models: [Ticket.self])
        var invalid = Ticket(title: " ", priority: 9)
        let writes: [(String, (SQLiteConnection) throws -> Void)] = [
            ("insert", { try invalid.insert($0) }),
            ("save", { try invalid.save($0) }),
            ("upsert", { try invalid.upsert($0) }),
        ]
        for (name, write) in writes {
            let error = validationError { try db.write { try write($0) } }
            #expect(error?.fields == ["title", "priority"], "\(name)")
            #expect(error?[\Ticket.title] == ["Enter a title"], "\(name)")
            #expect(error?.batchIndex == nil, "\(name)")
        }
        #expect(try db.read { try Ticket.count($0) } == 0)
        #expect(invalid.id == nil)
    }

    @Test(arguments: TestStorage.allCases)
    func anInvalidUpdateLeavesTheRowAsItWas(store: TestStorage) throws {
        let db = try store.open(models: [Ticket.self])
        var ticket = Ticket(title: "Valid")
        try db.write { try ticket.insert($0) }
        var edited = ticket
        edited.title = ""
        #expect(validationError { try db.write { try edited.update($0) } }?.fields == ["title"])
        #expect(validationError { try db.write { try edited.update($0, only: [\.title]) } }?.fields == ["title"])
        #expect(validationError { try db.write { try edited.save($0) } }?.fields == ["title"])
        #expect(try db.read { try Ticket.all($0) } == [ticket])
    }

    @Test(arguments: TestStorage.allCases)
    func saveAllValidatesEveryModelBeforeTheTransaction(store: TestStorage) throws {
        let db = try store.open(models: [Ticket.self])
        var batch = [Ticket(title: "One"), Ticket(title: "Two"), Ticket(title: "", priority: 0)]
        let error = validationError { try db.write { try Ticket.saveAll(&batch, $0) } }
        #expect(error?.batchIndex == 2)
        #expect(error?.fields == ["title", "priority"])
        #expect(error?.description.contains("batch row 2") == true)
        #expect(try db.read { try Ticket.count($0) } == 0)
        #expect(batch.allSatisfy { $0.id == nil })
    }

    @Test(arguments: TestStorage.allCases)
    func validationCanBeTurnedOffPerCall(store: TestStorage) throws {
        let db = try store.open(models: [Ticket.self])
        var ticket = Ticket(title: "", priority: 0)
        try db.write { try ticket.insert($0, validate: false) }
        var batch = [Ticket(title: "")]
        try db.write { try Ticket.saveAll(&batch, $0, validate: false) }
        #expect(try db.read { try Ticket.count($0) } == 2)
    }
}
