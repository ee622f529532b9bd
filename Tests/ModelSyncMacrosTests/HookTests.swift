import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite("@Model: JSON hooks")
struct HookTests {
    /// The expansion of `struct Tag { var name: String; <members> }` with `hooks`.
    private func expansion(members: String, hooks: String?) -> String {
        let hooksLine = hooks.map { "\n    static let jsonHooks: ModelSyncJSON.JSONHooks = [\($0)]" } ?? ""
        return """
            struct Tag {
                var name: String
            \(members)
            }

            extension Tag: ModelSyncCore.Model, ModelSyncJSON.JSONModel, Swift.Decodable, Swift.Encodable {
                static let schema = ModelSyncCore.ModelSchema(
                    name: "Tag",
                    fields: [
                        ModelSyncCore.FieldSchema(name: "name", keyPath: \\Self.name),
                    ]
                )
                static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema)\(hooksLine)
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
    }

    @Test(
        "hooks are listed in runtime order, whatever the declaration order",
        arguments: [
            ("    func other() {}", nil),
            ("    func didEncode(_ json: inout JSONValue) throws {}", ".didEncode"),
            ("    mutating func didDecode() throws {}", ".didDecode"),
            ("    static func willDecode(_ json: inout JSONValue) throws {}", ".willDecode"),
            (
                """
                    func didEncode(_ json: inout JSONValue) throws {}
                    static func willDecode(_ json: inout JSONValue) throws {}
                """,
                ".willDecode, .didEncode"
            ),
        ] as [(String, String?)]
    )
    func detectedHooks(members: String, hooks: String?) {
        assertExpansion(
            """
            @Model
            struct Tag {
                var name: String
            \(members)
            }
            """,
            expandedSource: expansion(members: members, hooks: hooks)
        )
    }

    @Test func hookWithWrongStaticnessIsNotCalledAndWarns() {
        let members = """
                func willDecode(_ json: inout JSONValue) throws {}
                static func didEncode(_ json: inout JSONValue) throws {}
                mutating func didDecode() throws {}
            """
        assertExpansion(
            """
            @Model
            struct Tag {
                var name: String
            \(members)
            }
            """,
            expandedSource: expansion(members: members, hooks: ".didDecode"),
            diagnostics: [
                DiagnosticSpec(
                    message: "'willDecode' is called as a JSON hook only when it is 'static'",
                    line: 4,
                    column: 10,
                    severity: .warning
                ),
                DiagnosticSpec(
                    message: "'didEncode' is called as a JSON hook only when it is an instance method",
                    line: 5,
                    column: 17,
                    severity: .warning
                ),
            ]
        )
    }
}
