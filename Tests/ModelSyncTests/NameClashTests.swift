import ModelSync
import NameClashes
import Testing

// This file imports a module that declares its own `Model` macro, `Database`, `Validatable` and
// `Validator` (as SwiftData, GRDB and Vapor do). The bare names are ambiguous here, so the
// compiler makes us say whose; `ModelSync.` (or the layer's module) picks ours.

@ModelSync.Model
struct ClubMember: ModelSync.SQLModel, Equatable {
    var id: Int?
    @ModelSync.JSON("display_name") var name: String
}

extension ClubMember: ModelSync.Validatable {
    static let validator = ModelSync.Validator<ClubMember> {
        Validate(\.name, .required("Enter a name"))
    }
}

/// The other module's `Validatable`, on the same type: both protocols live side by side.
extension ClubMember: NameClashes.Validatable {
    func validate() throws { _ = try validated() }
}

@Suite("Names shared with SwiftData, GRDB and Vapor")
struct NameClashTests {
    @Test func moduleQualifiedNamesReachModelSync() throws {
        let db = try ModelSync.Database(inMemory: [ClubMember.self])
        var account = ClubMember(name: "Ada")
        try db.write { try account.insert($0) }
        #expect(try db.read { try ClubMember.find(account.id, $0) } == account)
        // The `@ModelSync.JSON` key took effect: the marker was recognised as ours.
        #expect(try JSONModelEncoder().encodeToString(account).contains(#""display_name":"Ada""#))
        // Ours validates when saving, and the other module's protocol reaches the same rules.
        var nameless = ClubMember(name: "")
        #expect(throws: ValidationError.self) { try db.write { try nameless.insert($0) } }
        #expect(throws: ValidationError.self) { try (nameless as any NameClashes.Validatable).validate() }
        _ = NameClashes.Database()
        _ = NameClashes.Validator()
    }
}
