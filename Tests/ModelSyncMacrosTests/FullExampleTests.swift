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

                public static let _modelSyncDefault_slug = ModelSync.DeclaredDefault(for: \\Self.slug) {
                    ""
                }

                public static let _modelSyncDefault_tags = ModelSync.DeclaredDefault(for: \\Self.tags) {
                    []
                }

                public static let _modelSyncDefault_draftNote = ModelSync.DeclaredDefault(for: \\Self.draftNote) {
                    ""
                }

                public static let _modelSyncDefault_isNew = ModelSync.DeclaredDefault(for: \\Self.isNew) {
                    true
                }
            }

            extension Post: ModelSync.Model, ModelSync.JSONModel, ModelSync.SQLModel, Swift.Decodable, Swift.Encodable {
                public static let schema = ModelSync.ModelSchema(
                    name: "Post",
                    fields: [
                        ModelSync.FieldSchema(name: "id", keyPath: \\Self.id, isPrimaryKey: true),
                        ModelSync.FieldSchema(name: "userId", keyPath: \\Self.userId),
                        ModelSync.FieldSchema(name: "text", keyPath: \\Self.text, jsonKey: "body"),
                        ModelSync.FieldSchema(name: "authorName", keyPath: \\Self.authorName, jsonKey: "author.name"),
                        ModelSync.FieldSchema(name: "publishedAt", keyPath: \\Self.publishedAt, transformer: ".iso8601WithFractionalSeconds"),
                        ModelSync.FieldSchema(name: "slug", keyPath: \\Self.slug, defaultValue: ModelSync.FieldDefault(source: "\\"\\"", for: \\Self.slug) { Self._modelSyncDefault_slug() }),
                        ModelSync.FieldSchema(name: "tags", keyPath: \\Self.tags, defaultValue: ModelSync.FieldDefault(source: "[]", for: \\Self.tags) { Self._modelSyncDefault_tags() }),
                        ModelSync.FieldSchema(name: "author", keyPath: \\Self.author),
                        ModelSync.FieldSchema(name: "draftNote", keyPath: \\Self.draftNote, defaultValue: ModelSync.FieldDefault(source: "\\"\\"", for: \\Self.draftNote) { Self._modelSyncDefault_draftNote() }, decodes: false),
                        ModelSync.FieldSchema(name: "password", keyPath: \\Self.password, encodes: false),
                        ModelSync.FieldSchema(name: "isNew", keyPath: \\Self.isNew, defaultValue: ModelSync.FieldDefault(source: "true", for: \\Self.isNew) { Self._modelSyncDefault_isNew() }),
                    ],
                    jsonKeys: .snakeCase
                )
                public static let jsonLayout = ModelSync.JSONLayout(schema: schema, dates: .millisecondsSince1970)
                public static let jsonHooks: ModelSync.JSONHooks = [.willDecode, .didDecode, .didEncode]
                public init(json decoder: inout ModelSync.JSONObjectDecoder) throws {
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
                public func encode(json encoder: inout ModelSync.JSONObjectEncoder) throws {
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
                public static let sqlTable = ModelSync.SQLTable(schema: schema)
                public init(row: inout ModelSync.SQLRowDecoder) throws {
                    self.id = try row.decode(0)
                    self.userId = try row.decode(1)
                    self.text = try row.decode(2)
                    self.authorName = try row.decode(3)
                    self.publishedAt = try row.decode(4)
                    self.slug = try row.decode(5)
                    self.tags = try row.decode(6)
                    self.author = try row.decode(7)
                    self.draftNote = try row.decode(8)
                    self.password = try row.decode(9)
                    self.isNew = try row.decode(10)
                }
                public func bind(to row: inout ModelSync.SQLRowEncoder) throws {
                    try row.encode(self.id, 0)
                    try row.encode(self.userId, 1)
                    try row.encode(self.text, 2)
                    try row.encode(self.authorName, 3)
                    try row.encode(self.publishedAt, 4)
                    try row.encode(self.slug, 5)
                    try row.encode(self.tags, 6)
                    try row.encode(self.author, 7)
                    try row.encode(self.draftNote, 8)
                    try row.encode(self.password, 9)
                    try row.encode(self.isNew, 10)
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
}
