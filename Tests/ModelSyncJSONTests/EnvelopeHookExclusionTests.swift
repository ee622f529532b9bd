import Foundation
import ModelSyncJSON
import Testing

@Suite struct EnvelopeTests {
    @Test func decodesFromARootKeyOrKeyPath() throws {
        let decoder = JSONModelDecoder()
        let single = try decoder.decode(User.self, from: #"{"data": {"id": 1, "name": "Ann"}}"#, at: "data")
        #expect(single == User(id: 1, name: "Ann"))

        let list = try decoder.decode([User].self, from: #"{"meta": {"items": [{"id": 2, "name": "Bob"}], "total": 1}}"#, at: "meta.items")
        #expect(list == [User(id: 2, name: "Bob")])

        let indexed = try decoder.decode(User.self, from: #"{"results": [{"id": 3, "name": "Cy"}]}"#, at: "results[0]")
        #expect(indexed.id == 3)
    }

    @Test func aMissingEnvelopeIsAnError() throws {
        let error = try #require(throws: JSONError.self) {
            try JSONModelDecoder().decode([User].self, from: #"{"data": []}"#, at: "results")
        }
        #expect(error.reason == .missingKey("results"))
    }

    @Test func encodesIntoAnEnvelope() throws {
        let json = try JSONModelEncoder().encodeToString([User(id: 1, name: "Ann")], at: "data.items")
        #expect(json == #"{"data":{"items":[{"id":1,"name":"Ann","email_address":null,"role":"member","is_active":true}]}}"#)
        #expect(try JSONModelDecoder().decode([User].self, from: json, at: "data.items") == [User(id: 1, name: "Ann")])
    }
}

@Suite struct HookTests {
    @Test func willDecodeReshapesTheRawObject() throws {
        let person = try JSONModelDecoder().decode(Person.self, from: #"{"fullName": "Ada King Lovelace"}"#)
        #expect(person.name == "Ada King Lovelace")
        #expect(person.initials == "AKL")
    }

    @Test func didDecodeCanRejectAValueWithThePath() throws {
        let error = try #require(throws: JSONError.self) {
            try JSONModelDecoder().decode([Person].self, from: #"[{"name": "A"}, {"name": ""}]"#)
        }
        #expect(error.path.description == "[1]")
        #expect(error.reason == .userError("emptyName"))
    }

    @Test func errorsAndReportsInsideAHookedModelKeepTheirPaths() throws {
        let (people, report) = try JSONModelDecoder().decodeWithReport(
            [Person].self, from: #"[{"name": "A"}, {"fullName": 42}]"#)
        #expect(people.map(\.name) == ["A", "42"])
        #expect(report.entries == [.init(path: "[1].name", kind: .coerced(from: "number 42", to: "String"))])

        let error = try #require(throws: JSONError.self) {
            try JSONModelDecoder(mode: .strict).decode([Person].self, from: #"[{"name": "A"}, {"fullName": 42}]"#)
        }
        #expect(error.path.description == "[1].name")
    }

    @Test func didEncodeReshapesTheOutput() throws {
        let json = try JSONModelEncoder().encodeToString(Person(name: "Ada"))
        #expect(json == #"{"name":"Ada","nameLength":3}"#)
    }
}

@Suite struct ExclusionTests {
    @Test func excludedPropertiesAreNeitherReadNorWritten() throws {
        let account = try JSONModelDecoder().decode(
            Account.self, from: #"{"id": 1, "createdAt": 0, "password": "secret", "localNote": "from server"}"#)
        #expect(account.password == "secret")
        #expect(account.localNote == "local")

        let json = try JSONModelEncoder().encodeToString(account)
        #expect(json == #"{"id":1,"createdAt":0,"localNote":"local"}"#)
        #expect(Account.schema.field(named: "password")?.encodes == false)
        #expect(Account.schema.field(named: "localNote")?.decodes == false)
    }
}
