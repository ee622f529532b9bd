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

            extension Tag: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
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

            extension Marker: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Marker",
                    fields: []
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
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

            extension Tag: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                \(memberModifier)static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                \(memberModifier)static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                \(memberModifier)init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                \(memberModifier)func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
                \(memberModifier)init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                \(memberModifier)func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
                }
            }
            """
        )
    }

    @Test(
        "Codable members only for the protocols the compiler asks for (the struct's own stay)",
        arguments: [
            (["Model", "JSONModel"], "", [String]()),
            (["Model", "JSONModel", "Encodable"], ", Swift.Encodable", ["encode"]),
            (["Model", "JSONModel", "Decodable"], ", Swift.Decodable", ["decode"]),
        ]
    )
    func codableOnlyWhenAsked(requested: [String], conformances: String, members: [String]) {
        let codable = [
            "decode": """

                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
            """,
            "encode": """

                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

            extension Tag: ModelSyncCore.Model, ModelSyncJSON.JSONModel\(conformances) {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
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

            extension API.Comment: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                public static let schema = ModelSyncCore.ModelSchema(
                    name: "Comment",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "body", keyPath: \\Self.body),
                    ]
                )
                public static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                public init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.body = try decoder.decode(0)
                }
                public func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.body, 0)
                }
                public init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                public func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

                    static let _modelSyncDefault_fallback = ModelSyncJSON.DeclaredDefault(for: \\Self.fallback) {
                        .member
                    }

                    static let _modelSyncDefault_history = ModelSyncJSON.DeclaredDefault(for: \\Self.history) {
                        []
                    }
                }
            }

            extension NS.User: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "User",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "role", keyPath: \\Self.role),
                        ModelSyncCore.FieldSchema(name: "fallback", keyPath: \\Self.fallback, defaultValue: ModelSyncCore.FieldDefault(source: ".member", for: \\Self.fallback) { Self._modelSyncDefault_fallback() }),
                        ModelSyncCore.FieldSchema(name: "named", keyPath: \\Self.named, transformer: ".roleName"),
                        ModelSyncCore.FieldSchema(name: "history", keyPath: \\Self.history, defaultValue: ModelSyncCore.FieldDefault(source: "[]", for: \\Self.history) { Self._modelSyncDefault_history() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.role = try decoder.decode(0)
                    self.fallback = try decoder.decode(1, default: Self._modelSyncDefault_fallback())
                    self.named = try decoder.decode(2, using: .roleName)
                    self.history = try decoder.decode(3, default: Self._modelSyncDefault_history())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.role, 0)
                    try encoder.encode(self.fallback, 1)
                    try encoder.encode(self.named, 2, using: .roleName)
                    try encoder.encode(self.history, 3)
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

                static let _modelSyncDefault_class = ModelSyncJSON.DeclaredDefault(for: \\Self.`class`) {
                    0
                }
            }

            extension Odd: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Odd",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "Type", keyPath: \\Self.self.`Type`),
                        ModelSyncCore.FieldSchema(name: "Protocol", keyPath: \\Self.self.`Protocol`),
                        ModelSyncCore.FieldSchema(name: "self", keyPath: \\Self.`self`),
                        ModelSyncCore.FieldSchema(name: "class", keyPath: \\Self.`class`, defaultValue: ModelSyncCore.FieldDefault(source: "0", for: \\Self.`class`) { Self._modelSyncDefault_class() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.`Type` = try decoder.decode(0)
                    self.`Protocol` = try decoder.decode(1)
                    self.`self` = try decoder.decode(2)
                    self.`class` = try decoder.decode(3, default: Self._modelSyncDefault_class())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.`Type`, 0)
                    try encoder.encode(self.`Protocol`, 1)
                    try encoder.encode(self.`self`, 2)
                    try encoder.encode(self.`class`, 3)
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

                typealias ModelID = ModelSyncCore.PrimaryKey
            }

            extension Membership: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Membership",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "userId", keyPath: \\Self.userId, isPrimaryKey: true),
                        ModelSyncCore.FieldSchema(name: "groupId", keyPath: \\Self.groupId, isPrimaryKey: true),
                        ModelSyncCore.FieldSchema(name: "since", keyPath: \\Self.since, jsonKey: "since_date"),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.userId = try decoder.decode(0)
                    self.groupId = try decoder.decode(1)
                    self.since = try decoder.decode(2)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.userId, 0)
                    try encoder.encode(self.groupId, 1)
                    try encoder.encode(self.since, 2)
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

                static let _modelSyncDefault_enabled = ModelSyncJSON.DeclaredDefault(for: \Self.enabled) {
                    false
                }

                static let _modelSyncDefault_title = ModelSyncJSON.DeclaredDefault(for: \Self.title) {
                    "Hello \(name)"
                }

                static let _modelSyncDefault_count = ModelSyncJSON.DeclaredDefault(for: \Self.count) {
                    3
                }

                static let _modelSyncDefault_ratio = ModelSyncJSON.DeclaredDefault(for: \Self.ratio) {
                    0.5
                }

                static let _modelSyncDefault_offset = ModelSyncJSON.DeclaredDefault(for: \Self.offset) {
                    -2
                }

                static let _modelSyncDefault_scale = ModelSyncJSON.DeclaredDefault(for: \Self.scale) {
                    -1.25
                }

                static let _modelSyncDefault_hex = ModelSyncJSON.DeclaredDefault(for: \Self.hex) {
                    0xFF
                }

                static let _modelSyncDefault_createdAt = ModelSyncJSON.DeclaredDefault(for: \Self.createdAt) {
                    Date()
                }

                static let _modelSyncDefault_items = ModelSyncJSON.DeclaredDefault(for: \Self.items) {
                    [1, 2]
                }
            }

            extension Settings: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Settings",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "enabled", keyPath: \Self.enabled, defaultValue: ModelSyncCore.FieldDefault(source: "false", for: \Self.enabled) { Self._modelSyncDefault_enabled() }),
                        ModelSyncCore.FieldSchema(name: "title", keyPath: \Self.title, defaultValue: ModelSyncCore.FieldDefault(source: "\"Hello \\(name)\"", for: \Self.title) { Self._modelSyncDefault_title() }),
                        ModelSyncCore.FieldSchema(name: "count", keyPath: \Self.count, defaultValue: ModelSyncCore.FieldDefault(source: "3", for: \Self.count) { Self._modelSyncDefault_count() }),
                        ModelSyncCore.FieldSchema(name: "ratio", keyPath: \Self.ratio, defaultValue: ModelSyncCore.FieldDefault(source: "0.5", for: \Self.ratio) { Self._modelSyncDefault_ratio() }),
                        ModelSyncCore.FieldSchema(name: "offset", keyPath: \Self.offset, defaultValue: ModelSyncCore.FieldDefault(source: "-2", for: \Self.offset) { Self._modelSyncDefault_offset() }),
                        ModelSyncCore.FieldSchema(name: "scale", keyPath: \Self.scale, defaultValue: ModelSyncCore.FieldDefault(source: "-1.25", for: \Self.scale) { Self._modelSyncDefault_scale() }),
                        ModelSyncCore.FieldSchema(name: "hex", keyPath: \Self.hex, defaultValue: ModelSyncCore.FieldDefault(source: "0xFF", for: \Self.hex) { Self._modelSyncDefault_hex() }),
                        ModelSyncCore.FieldSchema(name: "createdAt", keyPath: \Self.createdAt, defaultValue: ModelSyncCore.FieldDefault(source: "Date()", for: \Self.createdAt) { Self._modelSyncDefault_createdAt() }),
                        ModelSyncCore.FieldSchema(name: "items", keyPath: \Self.items, defaultValue: ModelSyncCore.FieldDefault(source: "[1, 2]", for: \Self.items) { Self._modelSyncDefault_items() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
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
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
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
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

                static let _modelSyncDefault_quoted = ModelSyncJSON.DeclaredDefault(for: \Self.quoted) {
                    "a\"b"
                }

                static let _modelSyncDefault_path = ModelSyncJSON.DeclaredDefault(for: \Self.path) {
                    "C:\\temp"
                }

                static let _modelSyncDefault_joined = ModelSyncJSON.DeclaredDefault(for: \Self.joined) {
                    {
                        let parts = ["x", "y"]
                        return parts.joined(separator: "\n")
                    }()
                }

                static let _modelSyncDefault_missing = ModelSyncJSON.DeclaredDefault(for: \Self.missing) {
                    nil
                }
            }

            extension Doc: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Doc",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "quoted", keyPath: \Self.quoted, defaultValue: ModelSyncCore.FieldDefault(source: "\"a\\\"b\"", for: \Self.quoted) { Self._modelSyncDefault_quoted() }),
                        ModelSyncCore.FieldSchema(name: "path", keyPath: \Self.path, defaultValue: ModelSyncCore.FieldDefault(source: "\"C:\\\\temp\"", for: \Self.path) { Self._modelSyncDefault_path() }),
                        ModelSyncCore.FieldSchema(name: "joined", keyPath: \Self.joined, defaultValue: ModelSyncCore.FieldDefault(source: "{\n    let parts = [\"x\", \"y\"]\n    return parts.joined(separator: \"\\n\")\n}()", for: \Self.joined) { Self._modelSyncDefault_joined() }),
                        ModelSyncCore.FieldSchema(name: "missing", keyPath: \Self.missing, defaultValue: ModelSyncCore.FieldDefault(source: "nil", for: \Self.missing) { Self._modelSyncDefault_missing() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.quoted = try decoder.decode(0, default: Self._modelSyncDefault_quoted())
                    self.path = try decoder.decode(1, default: Self._modelSyncDefault_path())
                    self.joined = try decoder.decode(2, default: Self._modelSyncDefault_joined())
                    self.missing = try decoder.decode(3, default: Self._modelSyncDefault_missing())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.quoted, 0)
                    try encoder.encode(self.path, 1)
                    try encoder.encode(self.joined, 2)
                    try encoder.encode(self.missing, 3)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

                static let _modelSyncDefault_body = ModelSyncJSON.DeclaredDefault(for: \Self.body) {
                    """
                        Dear "you",
                          indented
                        """
                }
            }

            extension Letter: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Letter",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "body", keyPath: \Self.body, defaultValue: ModelSyncCore.FieldDefault(source: "\"\"\"\n    Dear \"you\",\n      indented\n    \"\"\"", for: \Self.body) { Self._modelSyncDefault_body() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.body = try decoder.decode(0, default: Self._modelSyncDefault_body())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.body, 0)
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

                static let _modelSyncDefault_total = ModelSyncJSON.DeclaredDefault(for: \\Self.total) {
                    1 + 2
                }

                static let _modelSyncDefault_name = ModelSyncJSON.DeclaredDefault(for: \\Self.name) {
                    fallback ?? "none"
                }

                static let _modelSyncDefault_flag = ModelSyncJSON.DeclaredDefault(for: \\Self.flag) {
                    Self.strict ? true : false
                }
            }

            extension Limits: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Limits",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "total", keyPath: \\Self.total, defaultValue: ModelSyncCore.FieldDefault(source: "1 + 2", for: \\Self.total) { Self._modelSyncDefault_total() }),
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name, defaultValue: ModelSyncCore.FieldDefault(source: "fallback ?? \\"none\\"", for: \\Self.name) { Self._modelSyncDefault_name() }),
                        ModelSyncCore.FieldSchema(name: "flag", keyPath: \\Self.flag, defaultValue: ModelSyncCore.FieldDefault(source: "Self.strict ? true : false", for: \\Self.flag) { Self._modelSyncDefault_flag() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.total = try decoder.decode(0, default: Self._modelSyncDefault_total())
                    self.name = try decoder.decode(1, default: Self._modelSyncDefault_name())
                    self.flag = try decoder.decode(2, default: Self._modelSyncDefault_flag())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.total, 0)
                    try encoder.encode(self.name, 1)
                    try encoder.encode(self.flag, 2)
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

                static let _modelSyncDefault_day = ModelSyncJSON.DeclaredDefault(for: \Self.day) {
                    .distantPast
                }
            }

            extension Event: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Event",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "day", keyPath: \Self.day, transformer: ".dateFormat(\"yyyy-MM-dd'T'HH:mm \\\"Z\\\"\")", defaultValue: ModelSyncCore.FieldDefault(source: ".distantPast", for: \Self.day) { Self._modelSyncDefault_day() }),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.day = try decoder.decode(0, using: .dateFormat("yyyy-MM-dd'T'HH:mm \"Z\""), default: Self._modelSyncDefault_day())
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.day, 0, using: .dateFormat("yyyy-MM-dd'T'HH:mm \"Z\""))
                }
                init(from decoder: any Swift.Decoder) throws {
                    self = try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)
                }
                func encode(to encoder: any Swift.Encoder) throws {
                    try ModelSyncJSON.CodableBridge.encode(self, to: encoder)
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

                typealias ModelID = Int

                static let _modelSyncDefault_default = ModelSyncJSON.DeclaredDefault(for: \\Self.`default`) {
                    false
                }

                static let _modelSyncDefault_label = ModelSyncJSON.DeclaredDefault(for: \\Self.label) {
                    ""
                }
            }

            extension Point: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Point",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "id", keyPath: \\Self.id),
                        ModelSyncCore.FieldSchema(name: "x", keyPath: \\Self.x),
                        ModelSyncCore.FieldSchema(name: "y", keyPath: \\Self.y),
                        ModelSyncCore.FieldSchema(name: "default", keyPath: \\Self.`default`, defaultValue: ModelSyncCore.FieldDefault(source: "false", for: \\Self.`default`) { Self._modelSyncDefault_default() }),
                        ModelSyncCore.FieldSchema(name: "label", keyPath: \\Self.label, defaultValue: ModelSyncCore.FieldDefault(source: "\\"\\"", for: \\Self.label) { Self._modelSyncDefault_label() }),
                        ModelSyncCore.FieldSchema(name: "legacy", keyPath: \\Self.legacy),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.x = try decoder.decode(1)
                    self.y = try decoder.decode(2)
                    self.`default` = try decoder.decode(3, default: Self._modelSyncDefault_default())
                    self.label = try decoder.decode(4, default: Self._modelSyncDefault_label())
                    self.legacy = try decoder.decode(5)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.x, 1)
                    try encoder.encode(self.y, 2)
                    try encoder.encode(self.`default`, 3)
                    try encoder.encode(self.label, 4)
                    try encoder.encode(self.legacy, 5)
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

            extension Session: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Session",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name, encodes: false),
                        ModelSyncCore.FieldSchema(name: "token", keyPath: \\Self.token, decodes: false, encodes: false),
                    ],
                    jsonKeys: .useDefaultKeys
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                    self.token = try decoder.decodeStored(1, default: nil)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encodeStored(self.name, 0)
                    try encoder.encodeStored(self.token, 1)
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

            extension Ping: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Ping",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "at", keyPath: \\Self.at),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema, dates: .iso8601)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.at = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.at, 0)
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
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.name = try decoder.decode(0)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.name, 0)
                }
            }
            """,
            macros: modelSyncMacros.merging(["Model": MacroSpec(type: ModelMacro.self)], uniquingKeysWith: { $1 })
        )
    }
}
