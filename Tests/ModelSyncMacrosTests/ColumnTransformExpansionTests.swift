import ModelSyncMacros
import SwiftDiagnostics
import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite("@Model: transformers on SQLite columns")
struct ColumnTransformExpansionTests {
    @Test func inDatabaseTransformsTheRowCodecAndListsTheTable() {
        assertExpansion(
            """
            @Model
            struct Product: SQLModel {
                var id: Int?
                @Transform(.cents, inDatabase: true) var price: Int
                @Transform(.millisecondsSince1970, inDatabase: true) var seenAt: Date?
                @Transform(.iso8601) var listedAt: Date
            }
            """,
            expandedSource: """
            struct Product: SQLModel {
                var id: Int?
                var price: Int
                var seenAt: Date?
                var listedAt: Date

                typealias ModelID = Int
            }

            extension Product: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Product",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "id", keyPath: \\Self.id),
                        ModelSyncCore.FieldSchema(name: "price", keyPath: \\Self.price, transformer: ".cents"),
                        ModelSyncCore.FieldSchema(name: "seenAt", keyPath: \\Self.seenAt, transformer: ".millisecondsSince1970"),
                        ModelSyncCore.FieldSchema(name: "listedAt", keyPath: \\Self.listedAt, transformer: ".iso8601"),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.price = try decoder.decode(1, using: .cents)
                    self.seenAt = try decoder.decode(2, using: .millisecondsSince1970)
                    self.listedAt = try decoder.decode(3, using: .iso8601)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.price, 1, using: .cents)
                    try encoder.encode(self.seenAt, 2, using: .millisecondsSince1970)
                    try encoder.encode(self.listedAt, 3, using: .iso8601)
                }
                static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema, transforms: [
                    ModelSyncSQLite.SQLColumnTransform(1, \\Self.price, using: .cents),
                    ModelSyncSQLite.SQLColumnTransform(2, \\Self.seenAt, using: .millisecondsSince1970),
                ])
                init(row: inout ModelSyncSQLite.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.price = try row.decode(1, using: .cents)
                    self.seenAt = try row.decode(2, using: .millisecondsSince1970)
                    self.listedAt = try row.decode(3)
                }
                func bind(to row: inout ModelSyncSQLite.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.price, 1, using: .cents)
                    try row.encode(self.seenAt, 2, using: .millisecondsSince1970)
                    try row.encode(self.listedAt, 3)
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

    @Test func inDatabaseFalseIsTheDefault() {
        let source = """
            @Model
            struct Product: SQLModel {
                var id: Int?
                @Transform(.cents, inDatabase: false) var price: Int
            }
            """
        let text = expanded(source)
        #expect(text.contains("static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema)\n"), "\(text)")
        #expect(text.contains("self.price = try row.decode(1)\n"), "\(text)")
        #expect(text.contains("try row.encode(self.price, 1)\n"), "\(text)")
        #expect(text.contains("self.price = try decoder.decode(1, using: .cents)"), "\(text)")
    }

    @Test func inDatabaseWithoutSQLModelWarns() {
        assertExpansion(
            """
            @Model
            struct Price {
                @Transform(.cents, inDatabase: true) var amount: Int
            }
            """,
            expandedSource: """
            struct Price {
                var amount: Int
            }

            extension Price: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Price",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "amount", keyPath: \\Self.amount, transformer: ".cents"),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.amount = try decoder.decode(0, using: .cents)
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.amount, 0, using: .cents)
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
                    id: MessageID(domain: "ModelSyncMacros", id: "sqlOptionWithoutSQLModel"),
                    message: "'inDatabase' has an effect only when 'Price' declares 'SQLModel' ('struct Price: SQLModel')",
                    line: 3, column: 24, severity: .warning
                )
            ]
        )
    }

    @Test func inDatabaseNeedsABoolLiteral() {
        assertExpansion(
            """
            @Model
            struct Product: SQLModel {
                @Transform(.cents, inDatabase: flag) var price: Int
            }
            """,
            expandedSource: """
            struct Product: SQLModel {
                var price: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "ModelSyncMacros", id: "boolArgumentNotLiteral"),
                    message: "'inDatabase' needs 'true' or 'false'",
                    line: 3, column: 36
                )
            ]
        )
    }
}
