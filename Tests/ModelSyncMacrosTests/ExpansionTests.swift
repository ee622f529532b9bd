import ModelSyncMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

@Suite("@Model: expansion")
struct ExpansionTests {
    @Test func minimalModel() {
        assertExpansion(
            """
            @Model
            struct Tag {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag {
                var name: String
            }

            extension Tag: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.name = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.name, 0)
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

    @Test func modelWithoutFields() {
        assertExpansion(
            """
            @Model
            struct Marker {
                @Ignored var note = ""
            }
            """,
            expandedSource: """
            struct Marker {
                var note = ""
            }

            extension Marker: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Marker",
                    fields: []
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
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

    @Test(
        "members get the struct's access level when it is public or package",
        arguments: [
            ("public ", "public "),
            ("package ", "package "),
            ("", ""),
            ("internal ", ""),
            ("fileprivate ", ""),
            ("private ", ""),
            ("public final ", "public "),
        ]
    )
    func accessLevel(structModifier: String, memberModifier: String) {
        assertExpansion(
            """
            @Model
            \(structModifier)struct Tag {
                var name: String
            }
            """,
            expandedSource: """
            \(structModifier)struct Tag {
                var name: String
            }

            extension Tag: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                \(memberModifier)static let schema = ModelSync.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                \(memberModifier)static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                \(memberModifier)init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                \(memberModifier)func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                \(memberModifier)static let sqlTable = ModelSync.SQLTable(schema: schema)
                \(memberModifier)init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.name = try row.decode(0)
                }
                \(memberModifier)func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.name, 0)
                }
                \(memberModifier)init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                \(memberModifier)func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    @Test(
        "Codable members only for the protocols the compiler asks for (the struct's own stay)",
        arguments: [
            (["Model", "JSONModel", "SQLModel"], "", [String]()),
            (["Model", "JSONModel", "SQLModel", "Encodable"], ", Swift.Encodable", ["encode"]),
            (["Model", "JSONModel", "SQLModel", "Decodable"], ", Swift.Decodable", ["decode"]),
        ]
    )
    func codableOnlyWhenAsked(requested: [String], conformances: String, members: [String]) {
        let codable = [
            "decode": """

                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
            """,
            "encode": """

                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            """,
        ]
        let spec = MacroSpec(type: ModelMacro.self, conformances: requested.map { TypeSyntax(IdentifierTypeSyntax(name: .identifier($0))) })
        assertExpansion(
            """
            @Model
            struct Tag: Codable {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag: Codable {
                var name: String
            }

            extension Tag: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel\(conformances) {
                static let schema = ModelSync.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.name = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.name, 0)
                }\(members.compactMap { codable[$0] }.joined())
            }
            """,
            macros: modelSyncMacros.merging(["Model": spec], uniquingKeysWith: { $1 })
        )
    }

    @Test func nestedTypeExtendsQualifiedNameButSchemaUsesSimpleName() {
        assertExpansion(
            """
            enum API {
                @Model
                public struct Comment {
                    var body: String
                }
            }
            """,
            expandedSource: """
            enum API {
                public struct Comment {
                    var body: String
                }
            }

            extension API.Comment: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                public static let schema = ModelSync.ModelSchema(
                    name: "Comment",
                    fields: [
                        ModelSync.FieldSchema(name: "body", keyPath: \\Self.body),
                    ]
                )
                public static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                public init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.body = try decoder.decode(0)
                }
                public func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.body, 0)
                }
                public static let sqlTable = ModelSync.SQLTable(schema: schema)
                public init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.body = try row.decode(0)
                }
                public func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.body, 0)
                }
                public init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                public func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    @Test func nestedModelNeverSpellsSiblingTypesThatShadowTopLevelOnes() {
        // In `extension NS.User` an unqualified `Role` means a top-level `Role`, not
        // `NS.Role`; key paths take the type from the property declaration instead.
        assertExpansion(
            """
            struct Role {}

            enum NS {
                enum Role: String {
                    case admin, member
                }
                @Model
                struct User {
                    var role: Role
                    var fallback: Role = .member
                    @Transform(.roleName) var named: Role?
                    var history: [Role] = []
                }
            }
            """,
            expandedSource: """
            struct Role {}

            enum NS {
                enum Role: String {
                    case admin, member
                }
                struct User {
                    var role: Role
                    var fallback: Role = .member
                    var named: Role?
                    var history: [Role] = []

                    static let _modelSyncDefault_fallback = ModelSync.DeclaredDefault(for: \\Self.fallback) {
                        .member
                    }

                    static let _modelSyncDefault_history = ModelSync.DeclaredDefault(for: \\Self.history) {
                        []
                    }
                }
            }

            extension NS.User: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "User",
                    fields: [
                        ModelSync.FieldSchema(name: "role", keyPath: \\Self.role),
                        ModelSync.FieldSchema(name: "fallback", keyPath: \\Self.fallback, defaultValue: ModelSync.FieldDefault(source: ".member", for: \\Self.fallback) { Self._modelSyncDefault_fallback() }),
                        ModelSync.FieldSchema(name: "named", keyPath: \\Self.named, transformer: ".roleName"),
                        ModelSync.FieldSchema(name: "history", keyPath: \\Self.history, defaultValue: ModelSync.FieldDefault(source: "[]", for: \\Self.history) { Self._modelSyncDefault_history() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.role = try decoder.decode(0)
                    self.fallback = try decoder.decode(1, default: Self._modelSyncDefault_fallback())
                    self.named = try decoder.decode(2, using: .roleName)
                    self.history = try decoder.decode(3, default: Self._modelSyncDefault_history())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.role, 0)
                    try encoder.encode(self.fallback, 1)
                    try encoder.encode(self.named, 2, using: .roleName)
                    try encoder.encode(self.history, 3)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.role = try row.decode(0)
                    self.fallback = try row.decode(1)
                    self.named = try row.decode(2)
                    self.history = try row.decode(3)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.role, 0)
                    try row.encode(self.fallback, 1)
                    try row.encode(self.named, 2)
                    try row.encode(self.history, 3)
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

    @Test func keyPathsToPropertiesWithKeywordNames() {
        // `\Self.`Type`` would be read as the metatype, so `Type` and `Protocol` go
        // through the identity component; other names only need their backticks.
        assertExpansion(
            """
            @Model
            struct Odd {
                var `Type`: Int
                var `Protocol`: Int
                var `self`: Int
                var `class`: Int = 0
            }
            """,
            expandedSource: """
            struct Odd {
                var `Type`: Int
                var `Protocol`: Int
                var `self`: Int
                var `class`: Int = 0

                static let _modelSyncDefault_class = ModelSync.DeclaredDefault(for: \\Self.`class`) {
                    0
                }
            }

            extension Odd: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Odd",
                    fields: [
                        ModelSync.FieldSchema(name: "Type", keyPath: \\Self.self.`Type`),
                        ModelSync.FieldSchema(name: "Protocol", keyPath: \\Self.self.`Protocol`),
                        ModelSync.FieldSchema(name: "self", keyPath: \\Self.`self`),
                        ModelSync.FieldSchema(name: "class", keyPath: \\Self.`class`, defaultValue: ModelSync.FieldDefault(source: "0", for: \\Self.`class`) { Self._modelSyncDefault_class() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.`Type` = try decoder.decode(0)
                    self.`Protocol` = try decoder.decode(1)
                    self.`self` = try decoder.decode(2)
                    self.`class` = try decoder.decode(3, default: Self._modelSyncDefault_class())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.`Type`, 0)
                    try encoder.encode(self.`Protocol`, 1)
                    try encoder.encode(self.`self`, 2)
                    try encoder.encode(self.`class`, 3)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.`Type` = try row.decode(0)
                    self.`Protocol` = try row.decode(1)
                    self.`self` = try row.decode(2)
                    self.`class` = try row.decode(3)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.`Type`, 0)
                    try row.encode(self.`Protocol`, 1)
                    try row.encode(self.`self`, 2)
                    try row.encode(self.`class`, 3)
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

    @Test func compositePrimaryKeyAndQualifiedAttributes() {
        // The test harness does not resolve `@ModelSync.X`, so those stay in the source;
        // `@Model` still reads them.
        assertExpansion(
            """
            @Model
            struct Membership {
                @PrimaryKey var userId: Int
                @ModelSync.PrimaryKey var groupId: Int
                @ModelSync.JSON("since_date") var since: String
            }
            """,
            expandedSource: """
            struct Membership {
                var userId: Int
                @ModelSync.PrimaryKey var groupId: Int
                @ModelSync.JSON("since_date") var since: String
            }

            extension Membership: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Membership",
                    fields: [
                        ModelSync.FieldSchema(name: "userId", keyPath: \\Self.userId, isPrimaryKey: true),
                        ModelSync.FieldSchema(name: "groupId", keyPath: \\Self.groupId, isPrimaryKey: true),
                        ModelSync.FieldSchema(name: "since", keyPath: \\Self.since, jsonKey: "since_date"),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.userId = try decoder.decode(0)
                    self.groupId = try decoder.decode(1)
                    self.since = try decoder.decode(2)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.userId, 0)
                    try encoder.encode(self.groupId, 1)
                    try encoder.encode(self.since, 2)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.userId = try row.decode(0)
                    self.groupId = try row.decode(1)
                    self.since = try row.decode(2)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.userId, 0)
                    try row.encode(self.groupId, 1)
                    try row.encode(self.since, 2)
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

    @Test func unannotatedPropertiesNeedNoTypeInMacro() {
        // The generated code reaches every property through a key path, so the compiler
        // takes each type from the declaration, whatever the initializer.
        assertExpansion(
            #"""
            @Model
            struct Settings {
                var enabled = false
                var title = "Hello \(name)"
                var count = 3
                var ratio = 0.5
                var offset = -2
                var scale = -1.25
                var hex = 0xFF
                var createdAt = Date()
                var items = [1, 2]
            }
            """#,
            expandedSource: #"""
            struct Settings {
                var enabled = false
                var title = "Hello \(name)"
                var count = 3
                var ratio = 0.5
                var offset = -2
                var scale = -1.25
                var hex = 0xFF
                var createdAt = Date()
                var items = [1, 2]

                static let _modelSyncDefault_enabled = ModelSync.DeclaredDefault(for: \Self.enabled) {
                    false
                }

                static let _modelSyncDefault_title = ModelSync.DeclaredDefault(for: \Self.title) {
                    "Hello \(name)"
                }

                static let _modelSyncDefault_count = ModelSync.DeclaredDefault(for: \Self.count) {
                    3
                }

                static let _modelSyncDefault_ratio = ModelSync.DeclaredDefault(for: \Self.ratio) {
                    0.5
                }

                static let _modelSyncDefault_offset = ModelSync.DeclaredDefault(for: \Self.offset) {
                    -2
                }

                static let _modelSyncDefault_scale = ModelSync.DeclaredDefault(for: \Self.scale) {
                    -1.25
                }

                static let _modelSyncDefault_hex = ModelSync.DeclaredDefault(for: \Self.hex) {
                    0xFF
                }

                static let _modelSyncDefault_createdAt = ModelSync.DeclaredDefault(for: \Self.createdAt) {
                    Date()
                }

                static let _modelSyncDefault_items = ModelSync.DeclaredDefault(for: \Self.items) {
                    [1, 2]
                }
            }

            extension Settings: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Settings",
                    fields: [
                        ModelSync.FieldSchema(name: "enabled", keyPath: \Self.enabled, defaultValue: ModelSync.FieldDefault(source: "false", for: \Self.enabled) { Self._modelSyncDefault_enabled() }),
                        ModelSync.FieldSchema(name: "title", keyPath: \Self.title, defaultValue: ModelSync.FieldDefault(source: "\"Hello \\(name)\"", for: \Self.title) { Self._modelSyncDefault_title() }),
                        ModelSync.FieldSchema(name: "count", keyPath: \Self.count, defaultValue: ModelSync.FieldDefault(source: "3", for: \Self.count) { Self._modelSyncDefault_count() }),
                        ModelSync.FieldSchema(name: "ratio", keyPath: \Self.ratio, defaultValue: ModelSync.FieldDefault(source: "0.5", for: \Self.ratio) { Self._modelSyncDefault_ratio() }),
                        ModelSync.FieldSchema(name: "offset", keyPath: \Self.offset, defaultValue: ModelSync.FieldDefault(source: "-2", for: \Self.offset) { Self._modelSyncDefault_offset() }),
                        ModelSync.FieldSchema(name: "scale", keyPath: \Self.scale, defaultValue: ModelSync.FieldDefault(source: "-1.25", for: \Self.scale) { Self._modelSyncDefault_scale() }),
                        ModelSync.FieldSchema(name: "hex", keyPath: \Self.hex, defaultValue: ModelSync.FieldDefault(source: "0xFF", for: \Self.hex) { Self._modelSyncDefault_hex() }),
                        ModelSync.FieldSchema(name: "createdAt", keyPath: \Self.createdAt, defaultValue: ModelSync.FieldDefault(source: "Date()", for: \Self.createdAt) { Self._modelSyncDefault_createdAt() }),
                        ModelSync.FieldSchema(name: "items", keyPath: \Self.items, defaultValue: ModelSync.FieldDefault(source: "[1, 2]", for: \Self.items) { Self._modelSyncDefault_items() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.enabled = try decoder.decode(0, default: Self._modelSyncDefault_enabled())
                    self.title = try decoder.decode(1, default: Self._modelSyncDefault_title())
                    self.count = try decoder.decode(2, default: Self._modelSyncDefault_count())
                    self.ratio = try decoder.decode(3, default: Self._modelSyncDefault_ratio())
                    self.offset = try decoder.decode(4, default: Self._modelSyncDefault_offset())
                    self.scale = try decoder.decode(5, default: Self._modelSyncDefault_scale())
                    self.hex = try decoder.decode(6, default: Self._modelSyncDefault_hex())
                    self.createdAt = try decoder.decode(7, default: Self._modelSyncDefault_createdAt())
                    self.items = try decoder.decode(8, default: Self._modelSyncDefault_items())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.enabled, 0)
                    try encoder.encode(self.title, 1)
                    try encoder.encode(self.count, 2)
                    try encoder.encode(self.ratio, 3)
                    try encoder.encode(self.offset, 4)
                    try encoder.encode(self.scale, 5)
                    try encoder.encode(self.hex, 6)
                    try encoder.encode(self.createdAt, 7)
                    try encoder.encode(self.items, 8)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.enabled = try row.decode(0)
                    self.title = try row.decode(1)
                    self.count = try row.decode(2)
                    self.ratio = try row.decode(3)
                    self.offset = try row.decode(4)
                    self.scale = try row.decode(5)
                    self.hex = try row.decode(6)
                    self.createdAt = try row.decode(7)
                    self.items = try row.decode(8)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.enabled, 0)
                    try row.encode(self.title, 1)
                    try row.encode(self.count, 2)
                    try row.encode(self.ratio, 3)
                    try row.encode(self.offset, 4)
                    try row.encode(self.scale, 5)
                    try row.encode(self.hex, 6)
                    try row.encode(self.createdAt, 7)
                    try row.encode(self.items, 8)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """#
        )
    }

    @Test func defaultSourcesAreEscapedAndMultiLineDefaultsStayIndented() {
        assertExpansion(
            #"""
            @Model
            struct Doc {
                var quoted: String = "a\"b"
                var path: String = "C:\\temp"
                var joined: String = {
                    let parts = ["x", "y"]
                    return parts.joined(separator: "\n")
                }()
                var missing: String? = nil
            }
            """#,
            expandedSource: #"""
            struct Doc {
                var quoted: String = "a\"b"
                var path: String = "C:\\temp"
                var joined: String = {
                    let parts = ["x", "y"]
                    return parts.joined(separator: "\n")
                }()
                var missing: String? = nil

                static let _modelSyncDefault_quoted = ModelSync.DeclaredDefault(for: \Self.quoted) {
                    "a\"b"
                }

                static let _modelSyncDefault_path = ModelSync.DeclaredDefault(for: \Self.path) {
                    "C:\\temp"
                }

                static let _modelSyncDefault_joined = ModelSync.DeclaredDefault(for: \Self.joined) {
                    {
                        let parts = ["x", "y"]
                        return parts.joined(separator: "\n")
                    }()
                }

                static let _modelSyncDefault_missing = ModelSync.DeclaredDefault(for: \Self.missing) {
                    nil
                }
            }

            extension Doc: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Doc",
                    fields: [
                        ModelSync.FieldSchema(name: "quoted", keyPath: \Self.quoted, defaultValue: ModelSync.FieldDefault(source: "\"a\\\"b\"", for: \Self.quoted) { Self._modelSyncDefault_quoted() }),
                        ModelSync.FieldSchema(name: "path", keyPath: \Self.path, defaultValue: ModelSync.FieldDefault(source: "\"C:\\\\temp\"", for: \Self.path) { Self._modelSyncDefault_path() }),
                        ModelSync.FieldSchema(name: "joined", keyPath: \Self.joined, defaultValue: ModelSync.FieldDefault(source: "{\n    let parts = [\"x\", \"y\"]\n    return parts.joined(separator: \"\\n\")\n}()", for: \Self.joined) { Self._modelSyncDefault_joined() }),
                        ModelSync.FieldSchema(name: "missing", keyPath: \Self.missing, defaultValue: ModelSync.FieldDefault(source: "nil", for: \Self.missing) { Self._modelSyncDefault_missing() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.quoted = try decoder.decode(0, default: Self._modelSyncDefault_quoted())
                    self.path = try decoder.decode(1, default: Self._modelSyncDefault_path())
                    self.joined = try decoder.decode(2, default: Self._modelSyncDefault_joined())
                    self.missing = try decoder.decode(3, default: Self._modelSyncDefault_missing())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.quoted, 0)
                    try encoder.encode(self.path, 1)
                    try encoder.encode(self.joined, 2)
                    try encoder.encode(self.missing, 3)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.quoted = try row.decode(0)
                    self.path = try row.decode(1)
                    self.joined = try row.decode(2)
                    self.missing = try row.decode(3)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.quoted, 0)
                    try row.encode(self.path, 1)
                    try row.encode(self.joined, 2)
                    try row.encode(self.missing, 3)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """#
        )
    }

    @Test func multiLineStringLiteralKeepsItsContent() {
        assertExpansion(
            #"""
            @Model
            struct Letter {
                var body = """
                    Dear "you",
                      indented
                    """
            }
            """#,
            expandedSource: #"""
            struct Letter {
                var body = """
                    Dear "you",
                      indented
                    """

                static let _modelSyncDefault_body = ModelSync.DeclaredDefault(for: \Self.body) {
                    """
                        Dear "you",
                          indented
                        """
                }
            }

            extension Letter: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Letter",
                    fields: [
                        ModelSync.FieldSchema(name: "body", keyPath: \Self.body, defaultValue: ModelSync.FieldDefault(source: "\"\"\"\n    Dear \"you\",\n      indented\n    \"\"\"", for: \Self.body) { Self._modelSyncDefault_body() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.body = try decoder.decode(0, default: Self._modelSyncDefault_body())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.body, 0)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.body = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.body, 0)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """#
        )
    }

    @Test func operatorExpressionsAreCopiedAsWritten() {
        // No `as Type` follows the expression, so nothing needs parentheses.
        assertExpansion(
            """
            @Model
            struct Limits {
                var total: Int = 1 + 2
                var name: String = fallback ?? "none"
                var flag: Bool = Self.strict ? true : false
            }
            """,
            expandedSource: """
            struct Limits {
                var total: Int = 1 + 2
                var name: String = fallback ?? "none"
                var flag: Bool = Self.strict ? true : false

                static let _modelSyncDefault_total = ModelSync.DeclaredDefault(for: \\Self.total) {
                    1 + 2
                }

                static let _modelSyncDefault_name = ModelSync.DeclaredDefault(for: \\Self.name) {
                    fallback ?? "none"
                }

                static let _modelSyncDefault_flag = ModelSync.DeclaredDefault(for: \\Self.flag) {
                    Self.strict ? true : false
                }
            }

            extension Limits: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Limits",
                    fields: [
                        ModelSync.FieldSchema(name: "total", keyPath: \\Self.total, defaultValue: ModelSync.FieldDefault(source: "1 + 2", for: \\Self.total) { Self._modelSyncDefault_total() }),
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name, defaultValue: ModelSync.FieldDefault(source: "fallback ?? \\"none\\"", for: \\Self.name) { Self._modelSyncDefault_name() }),
                        ModelSync.FieldSchema(name: "flag", keyPath: \\Self.flag, defaultValue: ModelSync.FieldDefault(source: "Self.strict ? true : false", for: \\Self.flag) { Self._modelSyncDefault_flag() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.total = try decoder.decode(0, default: Self._modelSyncDefault_total())
                    self.name = try decoder.decode(1, default: Self._modelSyncDefault_name())
                    self.flag = try decoder.decode(2, default: Self._modelSyncDefault_flag())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.total, 0)
                    try encoder.encode(self.name, 1)
                    try encoder.encode(self.flag, 2)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.total = try row.decode(0)
                    self.name = try row.decode(1)
                    self.flag = try row.decode(2)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.total, 0)
                    try row.encode(self.name, 1)
                    try row.encode(self.flag, 2)
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

    @Test func transformerWithDefaultAndEscapedTransformerSource() {
        assertExpansion(
            #"""
            @Model
            struct Event {
                @Transform(.dateFormat("yyyy-MM-dd'T'HH:mm \"Z\"")) var day: Date = .distantPast
            }
            """#,
            expandedSource: #"""
            struct Event {
                var day: Date = .distantPast

                static let _modelSyncDefault_day = ModelSync.DeclaredDefault(for: \Self.day) {
                    .distantPast
                }
            }

            extension Event: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Event",
                    fields: [
                        ModelSync.FieldSchema(name: "day", keyPath: \Self.day, transformer: ".dateFormat(\"yyyy-MM-dd'T'HH:mm \\\"Z\\\"\")", defaultValue: ModelSync.FieldDefault(source: ".distantPast", for: \Self.day) { Self._modelSyncDefault_day() }),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.day = try decoder.decode(0, using: .dateFormat("yyyy-MM-dd'T'HH:mm \"Z\""), default: Self._modelSyncDefault_day())
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.day, 0, using: .dateFormat("yyyy-MM-dd'T'HH:mm \"Z\""))
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.day = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.day, 0)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSync.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSync.CodableBridge.encode(self, to: encoder)
                }
            }
            """#
        )
    }

    @Test func storedPropertyVariants() {
        // Multiple bindings share a trailing annotation; `let` without a value, observers,
        // keyword names, ignored lazy and implicitly-nil ignored optionals are all fine.
        assertExpansion(
            """
            @Model
            struct Point {
                let id: Int
                var x, y: Double
                var `default`: Bool = false
                var label: String = "" {
                    didSet { print(label) }
                }
                @Ignored lazy var cache: [Int] = []
                @Ignored var scratch: Int?
                @available(*, deprecated) var legacy: Int?
            }
            """,
            expandedSource: """
            struct Point {
                let id: Int
                var x, y: Double
                var `default`: Bool = false
                var label: String = "" {
                    didSet { print(label) }
                }
                lazy var cache: [Int] = []
                var scratch: Int?
                @available(*, deprecated) var legacy: Int?

                static let _modelSyncDefault_default = ModelSync.DeclaredDefault(for: \\Self.`default`) {
                    false
                }

                static let _modelSyncDefault_label = ModelSync.DeclaredDefault(for: \\Self.label) {
                    ""
                }
            }

            extension Point: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Point",
                    fields: [
                        ModelSync.FieldSchema(name: "id", keyPath: \\Self.id),
                        ModelSync.FieldSchema(name: "x", keyPath: \\Self.x),
                        ModelSync.FieldSchema(name: "y", keyPath: \\Self.y),
                        ModelSync.FieldSchema(name: "default", keyPath: \\Self.`default`, defaultValue: ModelSync.FieldDefault(source: "false", for: \\Self.`default`) { Self._modelSyncDefault_default() }),
                        ModelSync.FieldSchema(name: "label", keyPath: \\Self.label, defaultValue: ModelSync.FieldDefault(source: "\\"\\"", for: \\Self.label) { Self._modelSyncDefault_label() }),
                        ModelSync.FieldSchema(name: "legacy", keyPath: \\Self.legacy),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.x = try decoder.decode(1)
                    self.y = try decoder.decode(2)
                    self.`default` = try decoder.decode(3, default: Self._modelSyncDefault_default())
                    self.label = try decoder.decode(4, default: Self._modelSyncDefault_label())
                    self.legacy = try decoder.decode(5)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.x, 1)
                    try encoder.encode(self.y, 2)
                    try encoder.encode(self.`default`, 3)
                    try encoder.encode(self.label, 4)
                    try encoder.encode(self.legacy, 5)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.x = try row.decode(1)
                    self.y = try row.decode(2)
                    self.`default` = try row.decode(3)
                    self.label = try row.decode(4)
                    self.legacy = try row.decode(5)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.x, 1)
                    try row.encode(self.y, 2)
                    try row.encode(self.`default`, 3)
                    try row.encode(self.label, 4)
                    try row.encode(self.legacy, 5)
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

    @Test func optionalVarExcludedFromDecodingNeedsNoInitializer() {
        assertExpansion(
            """
            @Model(jsonKeys: .useDefaultKeys, dates: nil, decodeExcluding: ["token"], encodeExcluding: ["token", "name"])
            struct Session {
                var name: String
                var token: String?
            }
            """,
            expandedSource: """
            struct Session {
                var name: String
                var token: String?
            }

            extension Session: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Session",
                    fields: [
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name, encodes: false),
                        ModelSync.FieldSchema(name: "token", keyPath: \\Self.token, decodes: false, encodes: false),
                    ],
                    jsonKeys: .useDefaultKeys
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                    self.token = try decoder.decodeStored(1, default: nil)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encodeStored(self.name, 0)
                    try encoder.encodeStored(self.token, 1)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.name = try row.decode(0)
                    self.token = try row.decode(1)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.name, 0)
                    try row.encode(self.token, 1)
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

    @Test func datesArgumentAlone() {
        assertExpansion(
            """
            @Model(dates: .iso8601)
            struct Ping {
                var at: Date
            }
            """,
            expandedSource: """
            struct Ping {
                var at: Date
            }

            extension Ping: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSync.ModelSchema(
                    name: "Ping",
                    fields: [
                        ModelSync.FieldSchema(name: "at", keyPath: \\Self.at),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema, dates: .iso8601)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.at = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.at, 0)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.at = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.at, 0)
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

    @Test func existingConformancesAreNotRepeated() {
        // The compiler passes only the protocols the type does not conform to yet.
        assertExpansion(
            """
            @Model
            struct Tag: JSONModel {
                var name: String
            }
            """,
            expandedSource: """
            struct Tag: JSONModel {
                var name: String
            }

            extension Tag {
                static let schema = ModelSync.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSync.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSync.JSONLayout(schema: schema)
                init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                static let sqlTable = ModelSync.SQLTable(schema: schema)
                init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.name = try row.decode(0)
                }
                func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.name, 0)
                }
            }
            """,
            macros: modelSyncMacros.merging(["Model": MacroSpec(type: ModelMacro.self)], uniquingKeysWith: { $1 })
        )
    }
}
