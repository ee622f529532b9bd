import SwiftDiagnostics
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
            struct Post {
                @PrimaryKey(autoincrement: false) var id: Int
                @Column(indexed: true) var userId: Int
                @Column("headline", unique: true) var title: String
                @Column(nil) var slug: String = ""
            }
            """,
            expandedSource: """
            struct Post {
                var id: Int
                var userId: Int
                var title: String
                var slug: String = ""

                static let _modelSyncDefault_slug = ModelSync.DeclaredDefault(for: \\Self.slug) {
                    ""
                }
            }

            extension Post: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Post",
                    fields: [
                        ModelSync.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true),
                        ModelSync.FieldSchema(name: "userId", keyPath: \\Self.userId, isIndexed: true),
                        ModelSync.FieldSchema(name: "title", keyPath: \\Self.title, column: "headline", isUnique: true),
                        ModelSync.FieldSchema(name: "slug", keyPath: \\Self.slug, defaultValue: ModelSync.FieldDefault(source: "\\"\\"", for: \\Self.slug) { Self._modelSyncDefault_slug() }),
                    ],
                    table: "posts",
                    columns: .snakeCase,
                    withoutRowID: true,
                    indexes: [["userId", "slug"]],
                    unique: [["userId", "title"]]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.userId = try decoder.decode(1)
                    self.title = try decoder.decode(2)
                    self.slug = try decoder.decode(3, default: Self._modelSyncDefault_slug())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.userId, 1)
                    try encoder.encode(self.title, 2)
                    try encoder.encode(self.slug, 3)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.userId = try row.decode(1)
                    self.title = try row.decode(2)
                    self.slug = try row.decode(3)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.userId, 1)
                    try row.encode(self.title, 2)
                    try row.encode(self.slug, 3)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    @Test func autoincrementAndJSONExclusionsStillStored() {
        assertExpansion(
            """
            @Model(encodeExcluding: ["password"])
            struct User {
                @PrimaryKey(autoincrement: true) var id: Int64?
                var password: String
            }
            """,
            expandedSource: """
            struct User {
                var id: Int64?
                var password: String
            }

            extension User: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "User",
                    fields: [
                        ModelSync.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true, isAutoincrement: true),
                        ModelSync.FieldSchema(name: "password", keyPath: \\Self.password, encodes: false),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.password = try decoder.decode(1)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encodeStored(self.password, 1)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.password = try row.decode(1)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.password, 1)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
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
            struct Post {
                @Column("\(prefix)id") var id: Int
                @Column("") var title: String
            }
            """#,
            expandedSource: """
            struct Post {
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
            struct Post {
                var id: Int
            }
            """,
            expandedSource: """
            struct Post {
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
            struct Post {
                @Column("name") var a: String
                @Column("name") var b: String
            }
            """,
            expandedSource: """
            struct Post {
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
            struct Post {
                @PrimaryKey(autoincrement: auto) var id: Int
                @Column(unique: isUnique, indexed: yes) var title: String
            }
            """,
            expandedSource: """
            struct Post {
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
            struct Post {
                var id: Int
                var title: String
                @Ignored var note = ""
            }
            """,
            expandedSource: """
            struct Post {
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
            struct Tag {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag {
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
            struct Pair {
                @PrimaryKey(autoincrement: true) var a: Int
                @PrimaryKey var b: Int
            }
            @Model(withoutRowID: true)
            struct Keyed {
                @PrimaryKey(autoincrement: true) var id: Int
            }
            @Model
            struct Named {
                @PrimaryKey(autoincrement: true) var id: String
            }
            """,
            expandedSource: """
            struct Pair {
                var a: Int
                var b: Int
            }
            struct Keyed {
                var id: Int
            }
            struct Named {
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
            struct Post {
                var id: Int
                @Column("x") var computed: Int { id }
            }
            """,
            expandedSource: """
            struct Post {
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
            struct Post {
                var id: Int
                var computed: Int { id }
            }
            """
        )
    }
}
