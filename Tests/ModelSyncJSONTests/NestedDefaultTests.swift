import Foundation
import ModelSyncJSON
import Testing

/// Models nested in a namespace whose defaults name sibling types. That
/// this file compiles is most of the test: the defaults used to be copied into the generated
/// extension, where `Point` is not in scope.
enum SQ {
    @Model
    struct Point: Equatable {
        var x: Int
        var y: Int
    }

    @Model
    struct Student: Equatable {
        var id: Int
        var point: Point = Point(x: 0, y: 0)
        var home = Point(x: 1, y: 2)
        var visits: [Point] = [Point(x: 3, y: 4)]
        var nickname = SQ.defaultNickname
        var tags: [String] = []
    }

    static let defaultNickname = "student"
}

@Suite struct NestedDefaultTests {
    @Test func missingKeysTakeDefaultsWrittenInTheNamespace() throws {
        let student = try JSONModelDecoder().decode(SQ.Student.self, from: #"{"id": 1}"#)
        #expect(student == SQ.Student(id: 1))
        #expect(student.point == SQ.Point(x: 0, y: 0))
        #expect(student.home == SQ.Point(x: 1, y: 2))
        #expect(student.visits == [SQ.Point(x: 3, y: 4)])
        #expect(student.nickname == "student")
    }

    @Test func theSchemaEvaluatesTheDefaults() throws {
        let field = try #require(SQ.Student.schema.fields.first { $0.name == "point" })
        let value = try #require(field.defaultValue)
        #expect(value.source == "Point(x: 0, y: 0)")
        #expect(value.value() as? SQ.Point == SQ.Point(x: 0, y: 0))
    }
}
