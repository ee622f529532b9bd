import SwiftDiagnostics
import SwiftSyntaxMacrosGenericTestSupport
import Testing

private func id(_ name: String) -> MessageID {
    MessageID(domain: "ModelSyncMacros", id: name)
}

/// On errors `@Model` adds nothing, so the expansion is the source without the attributes.
@Suite("@Model: diagnostics")
struct DiagnosticTests {
    // MARK: Declarations

    @Test(arguments: ["class", "enum", "actor", "protocol"])
    func onlyStructs(kind: String) {
        assertExpansion(
            """
            @Model
            \(kind) Post {
            }
            """,
            expandedSource: """
            \(kind) Post {
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("notAStruct"),
                    message: "@Model can only be applied to a struct",
                    line: 1,
                    column: 1
                )
            ]
        )
    }

    @Test func genericStruct() {
        assertExpansion(
            """
            @Model
            struct Box<Value> {
                var value: Value
            }
            """,
            expandedSource: """
            struct Box<Value> {
                var value: Value
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("genericType"),
                    message: "@Model does not support generic types",
                    line: 2,
                    column: 11
                )
            ]
        )
    }

    // MARK: Attributes in the wrong place

    @Test(
        arguments: [
            ("@PrimaryKey", "PrimaryKey"),
            ("@JSON(\"shout\")", "JSON"),
            ("@Transform(.uppercase)", "Transform"),
        ]
    )
    func fieldAttributeOnComputedProperty(attribute: String, name: String) {
        assertExpansion(
            """
            @Model
            struct Post {
                var text: String
                \(attribute) var upper: String { text.uppercased() }
            }
            """,
            expandedSource: """
            struct Post {
                var text: String
                var upper: String { text.uppercased() }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("attributeOnComputedProperty"),
                    message: "@\(name) cannot be applied to a computed property",
                    line: 4,
                    column: 5,
                    fixIts: [FixItSpec(message: "remove '@\(name)'")]
                )
            ],
            fixedSource: """
            @Model
            struct Post {
                var text: String
                var upper: String { text.uppercased() }
            }
            """
        )
    }

    @Test func fieldAttributeOnStaticPropertyKeepsOtherAttributes() {
        assertExpansion(
            """
            @Model
            struct Post {
                @available(*, deprecated) @JSON("n") static let count = 0
            }
            """,
            expandedSource: """
            struct Post {
                @available(*, deprecated) static let count = 0
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("attributeOnStaticProperty"),
                    message: "@JSON cannot be applied to a static property",
                    line: 3,
                    column: 31,
                    fixIts: [FixItSpec(message: "remove '@JSON'")]
                )
            ],
            fixedSource: """
            @Model
            struct Post {
                @available(*, deprecated) static let count = 0
            }
            """
        )
    }

    @Test func ignoredOnComputedOrStaticPropertyIsAWarning() {
        assertExpansion(
            """
            @Model
            struct Tag {
                var name: String
                @Ignored var upper: String { name.uppercased() }
                @Ignored static let all: [String] = []
            }
            """,
            expandedSource: """
            struct Tag {
                var name: String
                var upper: String { name.uppercased() }
                static let all: [String] = []
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
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("ignoredOnComputedProperty"),
                    message: "computed properties are never stored; @Ignored is redundant",
                    line: 4,
                    column: 5,
                    severity: .warning,
                    fixIts: [FixItSpec(message: "remove '@Ignored'")]
                ),
                DiagnosticSpec(
                    id: id("ignoredOnStaticProperty"),
                    message: "static properties are never stored; @Ignored is redundant",
                    line: 5,
                    column: 5,
                    severity: .warning,
                    fixIts: [FixItSpec(message: "remove '@Ignored'")]
                ),
            ],
            fixedSource: """
            @Model
            struct Tag {
                var name: String
                var upper: String { name.uppercased() }
                static let all: [String] = []
            }
            """
        )
    }

    // MARK: Properties the generated init cannot handle

    @Test func ignoredPropertyNeedsDefaultValue() {
        assertExpansion(
            """
            @Model
            struct Post {
                @Ignored var isSelected: Bool
                @Ignored let cached: Int?
            }
            """,
            expandedSource: """
            struct Post {
                var isSelected: Bool
                let cached: Int?
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("ignoredNeedsDefault"),
                    message: "@Ignored property 'isSelected' needs a default value",
                    line: 3,
                    column: 18
                ),
                DiagnosticSpec(
                    id: id("ignoredNeedsDefault"),
                    message: "@Ignored property 'cached' needs a default value",
                    line: 4,
                    column: 18
                ),
            ]
        )
    }

    @Test func decodeExcludedPropertyNeedsDefaultValue() {
        assertExpansion(
            """
            @Model(decodeExcluding: ["draft", "note"])
            struct Post {
                var draft: String
                let note: String?
            }
            """,
            expandedSource: """
            struct Post {
                var draft: String
                let note: String?
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("decodeExcludedNeedsDefault"),
                    message: "property 'draft' is excluded from decoding and needs a default value",
                    line: 3,
                    column: 9
                ),
                DiagnosticSpec(
                    id: id("decodeExcludedNeedsDefault"),
                    message: "property 'note' is excluded from decoding and needs a default value",
                    line: 4,
                    column: 9
                ),
            ]
        )
    }

    @Test func letWithInitialValue() {
        assertExpansion(
            """
            @Model
            struct Post {
                let version = 5
            }
            """,
            expandedSource: """
            struct Post {
                let version = 5
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("letWithInitialValue"),
                    message:
                        "'let' property 'version' with an initial value cannot be decoded; make it 'var' or mark it @Ignored",
                    line: 3,
                    column: 5,
                    fixIts: [FixItSpec(message: "replace 'let' with 'var'")]
                )
            ],
            fixedSource: """
            @Model
            struct Post {
                var version = 5
            }
            """
        )
    }

    @Test func letWithInitialValueIsFineWhenNotDecoded() {
        assertExpansion(
            """
            @Model(decodeExcluding: ["kind"])
            struct Post {
                let kind = "post"
                @Ignored let version = 5
            }
            """,
            expandedSource: """
            struct Post {
                let kind = "post"
                let version = 5

                static let _modelSyncDefault_kind = ModelSyncJSON.DeclaredDefault(for: \\Self.kind) {
                    "post"
                }
            }

            extension Post: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Post",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "kind", keyPath: \\Self.kind, defaultValue: ModelSyncCore.FieldDefault(source: "\\"post\\"", for: \\Self.kind) { Self._modelSyncDefault_kind() }, decodes: false),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)
                init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {
                }
                func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {
                    try encoder.encode(self.kind, 0)
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

    @Test func lazyProperty() {
        assertExpansion(
            """
            @Model
            struct Post {
                lazy var summary: String = "x"
                @available(*, deprecated) lazy var legacy: String = "y"
            }
            """,
            expandedSource: """
            struct Post {
                lazy var summary: String = "x"
                @available(*, deprecated) lazy var legacy: String = "y"
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("lazyProperty"),
                    message: "lazy properties are not supported by @Model; mark it @Ignored",
                    line: 3,
                    column: 5,
                    fixIts: [FixItSpec(message: "mark it '@Ignored'")]
                ),
                DiagnosticSpec(
                    id: id("lazyProperty"),
                    message: "lazy properties are not supported by @Model; mark it @Ignored",
                    line: 4,
                    column: 31,
                    fixIts: [FixItSpec(message: "mark it '@Ignored'")]
                ),
            ],
            fixedSource: """
            @Model
            struct Post {
                @Ignored lazy var summary: String = "x"
                @available(*, deprecated) @Ignored lazy var legacy: String = "y"
            }
            """
        )
    }

    @Test func propertyWrapper() {
        assertExpansion(
            """
            @Model
            struct Post {
                @State var count = 0
                @Ignored @State var selection = 0
            }
            """,
            expandedSource: """
            struct Post {
                @State var count = 0
                @State var selection = 0
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("propertyWrapper"),
                    message: "property wrappers are not supported by @Model",
                    line: 3,
                    column: 5
                )
            ]
        )
    }

    @Test func tuplePattern() {
        assertExpansion(
            """
            @Model
            struct Post {
                var (a, b): (Int, Int)
            }
            """,
            expandedSource: """
            struct Post {
                var (a, b): (Int, Int)
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("unsupportedPattern"),
                    message: "@Model needs one name per binding; declare each property separately",
                    line: 3,
                    column: 9
                )
            ]
        )
    }

    @Test func storedPropertyInsideIfConfig() {
        assertExpansion(
            """
            @Model
            struct Post {
                #if DEBUG
                var debugInfo: String
                #endif
                #if os(Linux)
                @Ignored var scratch = 0
                static let platform = "linux"
                #endif
            }
            """,
            expandedSource: """
            struct Post {
                #if DEBUG
                var debugInfo: String
                #endif
                #if os(Linux)
                var scratch = 0
                static let platform = "linux"
                #endif
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("propertyInIfConfig"),
                    message: "stored properties inside '#if' are not supported by @Model",
                    line: 3,
                    column: 5
                )
            ]
        )
    }

    // MARK: Types

    @Test(arguments: [
        "() -> Void",
        "@Sendable (Int) -> Int",
        "(Int, String)",
        "(x: Int)",
        "Any",
        "AnyObject",
        "some Equatable",
        "any Codable",
        "[String: Any]",
        "[(Int) -> Void]",
        "Codable & Hashable",
        "Int.Type",
        "Void",
    ])
    func unsupportedType(type: String) {
        assertExpansion(
            """
            @Model
            struct Post {
                var value: \(type)
            }
            """,
            expandedSource: """
            struct Post {
                var value: \(type)
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("unsupportedType"),
                    message: "type '\(type)' of 'value' cannot be stored by @Model",
                    line: 3,
                    column: 16
                )
            ]
        )
    }

    @Test func implicitlyUnwrappedOptional() {
        assertExpansion(
            """
            @Model
            struct Post {
                var title: String! // from the server
            }
            """,
            expandedSource: """
            struct Post {
                var title: String! // from the server
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("implicitlyUnwrappedOptional"),
                    message: "type 'String!' of 'title' cannot be stored by @Model; use 'String?'",
                    line: 3,
                    column: 16,
                    fixIts: [FixItSpec(message: "replace 'String!' with 'String?'")]
                )
            ],
            fixedSource: """
            @Model
            struct Post {
                var title: String? // from the server
            }
            """
        )
    }

    // MARK: @Model arguments

    @Test func excludedNamesMustBeFields() {
        assertExpansion(
            """
            @Model(decodeExcluding: ["title", "foo"], encodeExcluding: ["isSelected", "upper"])
            struct Post {
                var title: String = ""
                @Ignored var isSelected = false
                var upper: String { title.uppercased() }
            }
            """,
            expandedSource: """
            struct Post {
                var title: String = ""
                var isSelected = false
                var upper: String { title.uppercased() }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("unknownExcludedName"),
                    message: "'foo' is not a stored property of Post",
                    line: 1,
                    column: 35
                ),
                DiagnosticSpec(
                    id: id("ignoredExcludedName"),
                    message: "'isSelected' is @Ignored and never coded; listing it in 'encodeExcluding' has no effect",
                    line: 1,
                    column: 61,
                    severity: .warning
                ),
                DiagnosticSpec(
                    id: id("unknownExcludedName"),
                    message: "'upper' is not a stored property of Post",
                    line: 1,
                    column: 75
                ),
            ]
        )
    }

    @Test func excludedNamesMustBeLiterals() {
        assertExpansion(
            #"""
            @Model(decodeExcluding: Post.hidden, encodeExcluding: ["a", name, "b\(1)"])
            struct Post {
                var a: Int
            }
            """#,
            expandedSource: """
            struct Post {
                var a: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: id("excludedListNotLiteral"),
                    message: "'decodeExcluding' needs an array literal of string literals",
                    line: 1,
                    column: 25
                ),
                DiagnosticSpec(
                    id: id("excludedListNotLiteral"),
                    message: "'encodeExcluding' needs an array literal of string literals",
                    line: 1,
                    column: 61
                ),
                DiagnosticSpec(
                    id: id("excludedListNotLiteral"),
                    message: "'encodeExcluding' needs an array literal of string literals",
                    line: 1,
                    column: 67
                ),
            ]
        )
    }

    // MARK: @JSON keys

    @Test func jsonKeys() {
        assertExpansion(
            #"""
            @Model
            struct Post {
                @JSON("") var a: Int
                @JSON("x\(1)") var b: Int
                @JSON("body") var c: String
                @JSON("body") var d: String
            }
            """#,
            expandedSource: #"""
            struct Post {
                var a: Int
                var b: Int
                var c: String
                var d: String
            }
            """#,
            diagnostics: [
                DiagnosticSpec(id: id("emptyJSONKey"), message: "@JSON key must not be empty", line: 3, column: 11),
                DiagnosticSpec(
                    id: id("jsonKeyNotLiteral"),
                    message: "@JSON needs a string literal without interpolation",
                    line: 4,
                    column: 11
                ),
                DiagnosticSpec(
                    id: id("duplicateJSONKey"),
                    message: "duplicate JSON key 'body'",
                    line: 6,
                    column: 11,
                    notes: [NoteSpec(message: "first used by 'c' here", line: 5, column: 11)]
                ),
            ]
        )
    }

    // MARK: Everything at once

    @Test func allProblemsAreReportedTogether() {
        assertExpansion(
            """
            @Model(encodeExcluding: ["missing"])
            struct Post {
                @Ignored var a: Date
                var b: () -> Void
                lazy var c = 1
            }
            """,
            expandedSource: """
            struct Post {
                var a: Date
                var b: () -> Void
                lazy var c = 1
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Ignored property 'a' needs a default value", line: 3, column: 18),
                DiagnosticSpec(message: "type '() -> Void' of 'b' cannot be stored by @Model", line: 4, column: 12),
                DiagnosticSpec(
                    message: "lazy properties are not supported by @Model; mark it @Ignored",
                    line: 5,
                    column: 5,
                    fixIts: [FixItSpec(message: "mark it '@Ignored'")]
                ),
                DiagnosticSpec(message: "'missing' is not a stored property of Post", line: 1, column: 26),
            ]
        )
    }
}
