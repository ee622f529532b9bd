// The result of analysing a `@Model` struct. Emitters read only these values, so a new
// `@Model` argument or field attribute means: parse it in the analysis, add a property
// here, and print it in an emitter.

/// Everything the emitters need to know about one `@Model` struct.
struct ModelDescription {
    /// The struct's simple name, used as the schema's `name:`.
    var name: String
    /// `public`, `package`, or `nil` for the default access level of the members.
    var accessModifier: String?
    /// Source text of `@Model(jsonKeys:)`, if given.
    var jsonKeys: String?
    /// Source text of `@Model(dates:)`, if given.
    var dates: String?
    /// `@Model(table:)`, if given.
    var table: String?
    /// Source text of `@Model(columns:)`, if given.
    var columns: String?
    /// `@Model(withoutRowID: true)`.
    var withoutRowID: Bool
    /// `@Model(indexes:)`: property names per index.
    var indexes: [[String]]
    /// `@Model(unique:)`: property names per unique group.
    var unique: [[String]]
    /// The stored, non-ignored properties in declaration order; a field's index in this
    /// array is its index in the generated schema.
    var fields: [FieldDescription]
    /// The JSON hooks the struct declares, in the order the runtime lists them.
    var hooks: [JSONHook]
    /// Whether the struct declares `SQLModel` (or a protocol refining it), so that the SQL row
    /// codec is generated.
    var storesInSQLite: Bool
    /// The static properties declared with a relation builder (`static let author =
    /// belongsTo(User.self)`), as written; listed in the generated `relations` unless the
    /// struct declares `relations` itself (`nil` then).
    var relations: [String]?
    /// Whether each value gets a `RelationCache`: a struct that declares `SQLModel` and
    /// relations, unless it declares `Codable` itself (a synthesized conformance would code the
    /// cache's stored property).
    var cachesRelations: Bool
    /// The type of the model's id, as generated code spells it inside the struct (`Int`,
    /// `ModelSyncCore.PrimaryKey` for a composite key); nil when the model has no primary key,
    /// its type cannot be read from the syntax, or the struct declares `ModelID` itself.
    var modelIDType: String?
    /// Whether the model conforms to `KeyedModel`: it has a primary key whose type is known
    /// (written, or the struct's own `ModelID`).
    var isKeyed: Bool
}

/// One stored property that takes part in the model.
struct FieldDescription {
    /// The property name without backticks (`default` for `` `default` ``).
    var name: String
    /// The property name as written, for member access in generated code.
    var identifier: String
    /// Explicit key from `@JSON("...")`.
    var jsonKey: String?
    /// Explicit column name from `@Column("...")`.
    var column: String?
    var isPrimaryKey: Bool
    /// `@PrimaryKey(autoincrement: true)`.
    var isAutoincrement: Bool
    /// `@Column(unique: true)`.
    var isUnique: Bool
    /// `@Column(indexed: true)`.
    var isIndexed: Bool
    /// The `@Transform(...)` argument.
    var transformer: SourceSnippet?
    /// `@Transform(..., inDatabase: true)`: the SQLite column holds the transformer's
    /// representation too.
    var transformsColumn = false
    /// The property's initializer.
    var defaultValue: SourceSnippet?
    /// False when listed in `decodeExcluding:`.
    var decodes: Bool
    /// False when listed in `encodeExcluding:`.
    var encodes: Bool
    /// False for a `let` with an initial value, which no initializer can assign.
    var isAssignable = true
    /// The property's type as an id's type: the written type without its optional, or the
    /// type of a literal or `UUID()` initializer; nil when the syntax does not say.
    var idType: String?
}

/// The optional user hooks around JSON coding, detected by name.
enum JSONHook: String, CaseIterable {
    /// `static func willDecode(_ json: inout JSONValue) throws`
    case willDecode
    /// `mutating func didDecode() throws`
    case didDecode
    /// `func didEncode(_ json: inout JSONValue) throws`
    case didEncode

    /// Whether the hook is a static method.
    var isStatic: Bool { self == .willDecode }
}

/// The modules of ours that a qualified attribute or protocol may name: `@ModelSync.JSON`,
/// `ModelSyncSQLite.SQLModel`.
let ourModules: Set<String> = ["ModelSync", "ModelSyncCore", "ModelSyncJSON", "ModelSyncSQLite", "ModelSyncRemote", "ModelSyncStorage"]
