import Testing

@Suite("@Model: the full example")
struct FullExampleTests {
    @Test func everyFeatureTogether() {
        assertExpansion(
            """
            @Model(jsonKeys: .snakeCase, dates: .millisecondsSince1970, decodeExcluding: ["draftNote"], encodeExcluding: ["password"])
            public struct Post {
                @PrimaryKey var id: Int?
                var userId: Int
                @JSON("body") var text: String
                @JSON("author.name") var authorName: String?
                @Transform(.iso8601WithFractionalSeconds) var publishedAt: Date?
                var slug: String = ""
                var tags: [String] = []
                var author: User?
                var draftNote: String = ""
                var password: String?
                @Ignored var isSelected = false
                var isNew = true
                static var count = 0
                var upper: String { text.uppercased() }
                static func willDecode(_ json: inout JSONValue) throws {}
                mutating func didDecode() throws {}
                func didEncode(_ json: inout JSONValue) throws {}
            }
            """,
            expandedSource: """
            public struct Post {
                var id: Int?
                var userId: Int
                var text: String
                var authorName: String?
                var publishedAt: Date?
                var slug: String = ""
                var tags: [String] = []
                var author: User?
                var draftNote: String = ""
                var password: String?
                var isSelected = false
                var isNew = true
                static var count = 0
                var upper: String { text.uppercased() }
                static func willDecode(_ json: inout JSONValue) throws {}
                mutating func didDecode() throws {}
                func didEncode(_ json: inout JSONValue) throws {}

                public typealias ModelID = Int

                public static let _modelSyncDefault_slug = ModelSyncJSON.DeclaredDefault(for: \\Self.slug) {
                    ""
                }

                public static let _modelSyncDefault_tags = ModelSyncJSON.DeclaredDefault(for: \\Self.tags) {
                    []
                }

                public static let _modelSyncDefault_draftNote = ModelSyncJSON.DeclaredDefault(for: \\Self.draftNote) {
                    ""
                }

                public static let _modelSyncDefault_isNew = ModelSyncJSON.DeclaredDefault(for: \\Self.isNew) {
                    true
                }
            }

            extension Post: ModelSyncCore.Model, ModelSyncCore.KeyedModel, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                public static let schema = ModelSyncCore.ModelSchema(
                    name: "Post",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true),
                        ModelSyncCore.FieldSchema(name: "userId", keyPath: \\Self.userId),
                        ModelSyncCore.FieldSchema(name: "text", keyPath: \\Self.text, jsonKey: "body"),
                        ModelSyncCore.FieldSchema(name: "authorName", keyPath: \\Self.authorName, jsonKey: "author.name"),
                        ModelSyncCore.FieldSchema(name: "publishedAt", keyPath: \\Self.publishedAt, transformer: ".iso8601WithFractionalSeconds"),
                        ModelSyncCore.FieldSchema(name: "slug", keyPath: \\Self.slug, defaultValue: ModelSyncCore.FieldDefault(source: "\\"\\"", for: \\Self.slug) { Self._modelSyncDefault_slug() }),
                        ModelSyncCore.FieldSchema(name: "tags", keyPath: \\Self.tags, defaultValue: ModelSyncCore.FieldDefault(source: "[]", for: \\Self.tags) { Self._modelSyncDefault_tags() }),
                        ModelSyncCore.FieldSchema(name: "author", keyPath: \\Self.author),
                        ModelSyncCore.FieldSchema(name: "draftNote", keyPath: \\Self.draftNote, defaultValue: ModelSyncCore.FieldDefault(source: "\\"\\"", for: \\Self.draftNote) { Self._modelSyncDefault_draftNote() }, decodes: false),
                        ModelSyncCore.FieldSchema(name: "password", keyPath: \\Self.password, encodes: false),
                        ModelSyncCore.FieldSchema(name: "isNew", keyPath: \\Self.isNew, defaultValue: ModelSyncCore.FieldDefault(source: "true", for: \\Self.isNew) { Self._modelSyncDefault_isNew() }),
                    ],
                    jsonKeys: .snakeCase
                )
                public static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema, dates: .millisecondsSince1970)
                public static let jsonHooks: ModelSyncJSON.JSONHooks = [.willDecode, .didDecode, .didEncode]
                public init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                    self.id = try decoder.decode(0)
                    self.userId = try decoder.decode(1)
                    self.text = try decoder.decode(2)
                    self.authorName = try decoder.decode(3)
                    self.publishedAt = try decoder.decode(4, using: .iso8601WithFractionalSeconds)
                    self.slug = try decoder.decode(5, default: Self._modelSyncDefault_slug())
                    self.tags = try decoder.decode(6, default: Self._modelSyncDefault_tags())
                    self.author = try decoder.decode(7)
                    self.draftNote = try decoder.decodeStored(8, default: Self._modelSyncDefault_draftNote())
                    self.password = try decoder.decode(9)
                    self.isNew = try decoder.decode(10, default: Self._modelSyncDefault_isNew())
                }
                public func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.id, 0)
                    try encoder.encode(self.userId, 1)
                    try encoder.encode(self.text, 2)
                    try encoder.encode(self.authorName, 3)
                    try encoder.encode(self.publishedAt, 4, using: .iso8601WithFractionalSeconds)
                    try encoder.encode(self.slug, 5)
                    try encoder.encode(self.tags, 6)
                    try encoder.encode(self.author, 7)
                    try encoder.encode(self.draftNote, 8)
                    try encoder.encodeStored(self.password, 9)
                    try encoder.encode(self.isNew, 10)
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
}
