import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A student belongs to a teacher; the tests open databases that are given one or both.
enum School {
    @Model(table: "teachers")
    struct Teacher: SQLModel, Equatable {
        var id: Int?
        var name: String
    }

    @Model(table: "students")
    struct Student: SQLModel, Equatable {
        var id: Int?
        var teacherId: Int
        var name: String

        static let teacher = belongsTo(Teacher.self, onDelete: .cascade)
    }

    /// A student that is its own parent's kind: its foreign key refers to its own table.
    @Model(table: "mentored_students")
    struct MentoredStudent: SQLModel, Equatable {
        var id: Int?
        var mentoredStudentId: Int?
        var name: String

        static let mentor = belongsTo(MentoredStudent.self, onDelete: .setNull)
    }
}

/// The foreign keys SQLite has for `table`: the tables they refer to.
private func referencedTables(_ table: String, _ db: Database) throws -> [String] {
    try db.read { try $0.rows("SELECT \"table\" FROM pragma_foreign_key_list(?)", [.text(table)]).compactMap { $0[0].textValue } }
}

@Suite("Relations: a parent outside the schema")
struct ParentOutsideSchemaTests {
    /// Issue #38: the foreign key referred to a table nobody creates, so SQLite refused every
    /// insert ("no such table: main.teachers").
    @Test(arguments: TestStorage.allCases)
    func anOwnerWhoseParentIsNotGivenCanBeWritten(store: TestStorage) throws {
        let db = try store.open(models: [School.Student.self])
        var student = School.Student(teacherId: 7, name: "Ada")
        try db.write { try student.insert($0) }
        #expect(try referencedTables("students", db) == [])
        #expect(try db.read { try School.Student.all($0) } == [student])

        // The relation still loads once the parent's table exists (made on first use here).
        var teacher = School.Teacher(id: 7, name: "Grace")
        try db.write { try teacher.insert($0) }
        #expect(try db.read { try School.Student.teacher.load(for: student, $0) } == teacher)
    }

    @Test(arguments: [false, true])
    func aParentGivenWithItsOwnerKeepsTheForeignKey(parentFirst: Bool) throws {
        let models: [any SQLModel.Type] = parentFirst ? [School.Teacher.self, School.Student.self] : [School.Student.self, School.Teacher.self]
        let db = try TestStorage.memory.open(models: models)
        #expect(try referencedTables("students", db) == ["teachers"])
        var orphan = School.Student(teacherId: 1, name: "Orphan")
        let error = try #require(throws: SQLiteError.self) { try db.write { try orphan.insert($0) } }
        #expect(error.isConstraintViolation)
    }

    @Test func aParentWhoseTableExistsKeepsTheForeignKey() throws {
        let db = try TestStorage.memory.open(models: [School.Teacher.self])
        // The student's table is made on first use, after the teachers' table exists.
        var teacher = School.Teacher(name: "Grace")
        try db.write { try teacher.insert($0) }
        var student = School.Student(teacherId: try #require(teacher.id), name: "Ada")
        try db.write { try student.insert($0) }
        #expect(try referencedTables("students", db) == ["teachers"])
        // The delete rule is SQLite's: deleting the teacher deletes the student.
        try db.write { _ = try teacher.delete($0) }
        #expect(try db.read { try School.Student.count($0) } == 0)
    }

    @Test func aModelReferringToItselfKeepsTheForeignKey() throws {
        let db = try TestStorage.memory.open(models: [])
        var mentor = School.MentoredStudent(name: "Mentor")
        try db.write { try mentor.insert($0) }
        #expect(try referencedTables("mentored_students", db) == ["mentored_students"])
    }
}
