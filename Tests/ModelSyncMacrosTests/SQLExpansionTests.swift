import ModelSyncMacros
import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

private func id(_ name: String) -> MessageID {
    MessageID(domain: "ModelSyncMacros", id: name)
}

@Suite("@Model: SQL options")
struct SQLExpansionTests {
    @Test func tableColumnsIndexesAndKeys() {
        assertExpansion(
            """
            @Model(table: "posts", columns: .snakeCase, withoutRowID: true, indexes: [["userId", "slug"]], unique: [["userId", "title"]])
            struct Post: SQLModel {
                @PrimaryKey(autoincrement: false) var id: Int
                @Column(indexed: true) var userId: Int
                @Column("headline", unique: true) var title: String
                @Column(nil) var slug: String = ""
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
                var userId: Int
                var title: String
                var slug: String = ""

                typealias ModelID = Int

                static let _modelSyncDefault_slug = ModelSyncJSON.DeclaredDefault(for: \\Self.slug) {
                    ""
                }
            }

            extension Post: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Post",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true),
                        ModelSyncCore.FieldSchema(name: "userId", keyPath: \\Self.userId, isIndexed: true),
                        ModelSyncCore.FieldSchema(name: "title", keyPath: \\Self.title, column: "headline", isUnique: true),
                        ModelSyncCore.FieldSchema(name: "slug", keyPath: \\Self.slug, defaultValue: ModelSyncCore.FieldDefault(source: "\\"\\"", for: \\Self.slug) { Self._modelSyncDefault_slug() }),
                    ],
                    table: "posts",
                    columns: .snakeCase,
                    withoutRowID: true,
                    indexes: [["userId", "slug"]],
                    unique: [["userId", "title"]]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.userId = try decoder.decode(1)
                    self.title = try decoder.decode(2)
                    self.slug = try decoder.decode(3, default: Self._modelSyncDefault_slug())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.userId, 1)
                    try encoder.encode(self.title, 2)
                    try encoder.encode(self.slug, 3)
                }
                static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema)
                init(row: inout ModelSyncSQLite.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.userId = try row.decode(1)
                    self.title = try row.decode(2)
                    self.slug = try row.decode(3)
                }
                func bind(to row: inout ModelSyncSQLite.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.userId, 1)
                    try row.encode(self.title, 2)
                    try row.encode(self.slug, 3)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    @Test func autoincrementAndJSONExclusionsStillStored() {
        assertExpansion(
            """
            @Model(encodeExcluding: ["password"])
            struct User: SQLModel {
                @PrimaryKey(autoincrement: true) var id: Int64?
                var password: String
            }
            """,
            expandedSource: """
            struct User: SQLModel {
                var id: Int64?
                var password: String

                typealias ModelID = Int64
            }

            extension User: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "User",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true, isAutoincrement: true),
                        ModelSyncCore.FieldSchema(name: "password", keyPath: \\Self.password, encodes: false),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.password = try decoder.decode(1)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encodeStored(self.password, 1)
                }
                static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema)
                init(row: inout ModelSyncSQLite.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.password = try row.decode(1)
                }
                func bind(to row: inout ModelSyncSQLite.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.password, 1)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    // MARK: Diagnostics (on errors, the expansion is the source without the attributes)

    @Test func tableAndColumnNamesMustBeLiterals() {
        assertExpansion(
            #"""
            @Model(table: name)
            struct Post: SQLModel {
                @Column("\(prefix)id") var id: Int
                @Column("") var title: String
            }
            """#,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
                var title: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(id: id("tableNameNotLiteral"), message: "'table' needs a string literal without interpolation", line: 1, column: 15),
                DiagnosticSpec(id: id("columnNameNotLiteral"), message: "@Column needs a string literal without interpolation", line: 3, column: 13),
                DiagnosticSpec(id: id("emptyColumnName"), message: "@Column name must not be empty", line: 4, column: 13),
            ]
        )
    }

    @Test func emptyTableName() {
        assertExpansion(
            """
            @Model(table: "")
            struct Post: SQLModel {
                var id: Int
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(id: id("emptyTableName"), message: "table name must not be empty", line: 1, column: 15)
            ]
        )
    }

    @Test func duplicateColumnName() {
        assertExpansion(
            """
            @Model
            struct Post: SQLModel {
                @Column("name") var a: String
                @Column("name") var b: String
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var a: String
                var b: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("duplicateColumnName"),
                    message: "duplicate column name 'name'",
                    line: 4,
                    column: 13,
                    notes: [NoteSpec(message: "first used by 'a' here", line: 3, column: 13)]
                )
            ]
        )
    }

    @Test func flagsMustBeLiterals() {
        assertExpansion(
            """
            @Model(withoutRowID: flag)
            struct Post: SQLModel {
                @PrimaryKey(autoincrement: auto) var id: Int
                @Column(unique: isUnique, indexed: yes) var title: String
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
                var title: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(id: id("boolArgumentNotLiteral"), message: "'withoutRowID' needs 'true' or 'false'", line: 1, column: 22),
                DiagnosticSpec(id: id("boolArgumentNotLiteral"), message: "'autoincrement' needs 'true' or 'false'", line: 3, column: 32),
                DiagnosticSpec(id: id("boolArgumentNotLiteral"), message: "'unique' needs 'true' or 'false'", line: 4, column: 21),
                DiagnosticSpec(id: id("boolArgumentNotLiteral"), message: "'indexed' needs 'true' or 'false'", line: 4, column: 40),
            ]
        )
    }

    @Test func indexesNameStoredProperties() {
        assertExpansion(
            """
            @Model(indexes: [["title", "nope"]], unique: [["note"], names])
            struct Post: SQLModel {
                var id: Int
                var title: String
                @Ignored var note = ""
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
                var title: String
                var note = ""
            }
            """,
            diagnostics: [
                DiagnosticSpec(id: id("nameGroupsNotLiteral"), message: "'unique' needs an array literal of arrays of string literals", line: 1, column: 57),
                DiagnosticSpec(id: id("unknownColumnProperty"), message: "'nope' in 'indexes' is not a stored property of Post", line: 1, column: 28),
                DiagnosticSpec(id: id("unknownColumnProperty"), message: "'note' in 'unique' is not a stored property of Post", line: 1, column: 48),
            ]
        )
    }

    @Test func withoutRowIDNeedsAPrimaryKey() {
        assertExpansion(
            """
            @Model(withoutRowID: true)
            struct Tag: SQLModel {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag: SQLModel {
                var name: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("withoutRowIDNeedsPrimaryKey"),
                    message: "a 'withoutRowID' table needs a primary key; mark one with @PrimaryKey",
                    line: 1,
                    column: 22
                )
            ]
        )
    }

    @Test func autoincrementRules() {
        assertExpansion(
            """
            @Model
            struct Pair: SQLModel {
                @PrimaryKey(autoincrement: true) var a: Int
                @PrimaryKey var b: Int
            }
            @Model(withoutRowID: true)
            struct Keyed: SQLModel {
                @PrimaryKey(autoincrement: true) var id: Int
            }
            @Model
            struct Named: SQLModel {
                @PrimaryKey(autoincrement: true) var id: String
            }
            """,
            expandedSource: """
            struct Pair: SQLModel {
                var a: Int
                var b: Int
            }
            struct Keyed: SQLModel {
                var id: Int
            }
            struct Named: SQLModel {
                var id: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(id: id("autoincrementNeedsSingleKey"), message: "'autoincrement' needs a primary key of one column", line: 1, column: 1),
                DiagnosticSpec(id: id("autoincrementWithoutRowID"), message: "'autoincrement' is not available in a 'withoutRowID' table", line: 6, column: 22),
                DiagnosticSpec(
                    id: id("autoincrementNeedsInteger"), message: "'autoincrement' needs an integer primary key; 'id' is 'String'", line: 12, column: 46),
            ]
        )
    }

    @Test func columnOnComputedPropertyIsAnError() {
        assertExpansion(
            """
            @Model
            struct Post: SQLModel {
                var id: Int
                @Column("x") var computed: Int { id }
            }
            """,
            expandedSource: """
            struct Post: SQLModel {
                var id: Int
                var computed: Int { id }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("attributeOnComputedProperty"),
                    message: "@Column cannot be applied to a computed property",
                    line: 4,
                    column: 5,
                    fixIts: [FixItSpec(message: "remove '@Column'")]
                )
            ],
            fixedSource: """
            @Model
            struct Post: SQLModel {
                var id: Int
                var computed: Int { id }
            }
            """
        )
    }
}

/// `@Model` generates the SQL row codec only for a struct that declares `SQLModel` itself (the
/// macro, declared in ModelSyncJSON, cannot add that conformance).
@Suite("@Model: the SQL row codec follows SQLModel")
struct SQLConformanceTests {
    /// The source after expanding the library's macros.
    @Test(arguments: [
        ("struct A: SQLModel", true),
        ("struct A: ModelSyncSQLite.SQLModel", true),
        ("struct A: ModelSync.SQLModel", true),
        ("public struct A: Equatable, TimestampedModel", true),
        ("struct A: SoftDeletableModel", true),
        ("struct A: RemoteResource & SQLModel", true),
        ("struct A: SyncedModel", true),
        ("struct A", false),
        ("struct A: Equatable", false),
        ("struct A: RemoteResource", false),
        ("struct A: Other.SQLModel", false),
        ("struct A: MySQLModel", false),
    ])
    func rowCodecFollowsTheDeclaredConformance(declaration: String, storesInSQLite: Bool) {
        let text = expanded("@Model\n\(declaration) {\n    var id: Int\n}\n")
        #expect(text.contains("static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema)") == storesInSQLite, "\(text)")
        #expect(text.contains("init(row: inout ModelSyncSQLite.SQLRowDecoder)") == storesInSQLite)
        #expect(text.contains("func bind(to row: inout ModelSyncSQLite.SQLRowEncoder)") == storesInSQLite)
        // The JSON codec, whatever the struct declares.
        #expect(text.contains("init(json decoder: inout ModelSyncJSON.JSONObjectDecoder)"))
    }

    @Test func declaredRelationsAreListed() {
        let text = expanded(
            """
            @Model
            public struct Book: SQLModel {
                var id: Int?
                var writerId: Int
                static let writer = belongsTo(Writer.self, onDelete: .cascade)
                static let notes = Self.morphMany(Note.self, as: "subject")
                static let shelf = "A"
                static func helper() {}
            }
            """)
        #expect(text.contains("public static var relations: [any ModelSyncSQLite.ModelRelation<Self>] {"), "\(text)")
        #expect(text.contains("[Self.writer, Self.notes]"))
        // Each value keeps the relations it loads, in a stored property of the struct.
        #expect(text.contains("public let _modelSyncRelationCache = ModelSyncSQLite.RelationCache()"))
        #expect(text.contains("public var relationCache: ModelSyncSQLite.RelationCache? {"))
        // Not for a struct whose own Codable conformance might be synthesized (it would code it).
        let codable = expanded("@Model\nstruct B: SQLModel, Codable {\n    var id: Int\n    static let w = belongsTo(W.self)\n}\n")
        #expect(codable.contains("static var relations") && !codable.contains("RelationCache"))
        // A list of its own wins; a model without SQLModel gets none.
        let ownList = expanded(
            "@Model\nstruct B: SQLModel {\n    var id: Int\n    static let w = belongsTo(W.self)\n    static let relations: [any ModelRelation<B>] = []\n}\n")
        #expect(!ownList.contains("static var relations"))
        #expect(!expanded("@Model\nstruct B {\n    var id: Int\n    static let w = belongsTo(W.self)\n}\n").contains("static var relations"))
    }

    @Test func tableOptionsWithoutSQLModelWarn() {
        assertExpansion(
            """
            @Model(table: "tags", unique: [["name"]])
            struct Tag {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag {
                var name: String
            }

            extension Tag: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ],
                    table: "tags",
                    unique: [["name"]]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
                }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("sqlOptionWithoutSQLModel"),
                    message: "'table' has an effect only when 'Tag' declares 'SQLModel' ('struct Tag: SQLModel')",
                    line: 1, column: 8, severity: .warning
                ),
                DiagnosticSpec(
                    id: id("sqlOptionWithoutSQLModel"),
                    message: "'unique' has an effect only when 'Tag' declares 'SQLModel' ('struct Tag: SQLModel')",
                    line: 1, column: 23, severity: .warning
                ),
            ]
        )
    }
}
