import ModelSyncCore

/// Makes a struct a ModelSync model: generates its ``/ModelSyncCore/ModelSchema`` and its JSON
/// codec at compile time, with no `Codable` and no reflection; for a struct that declares
/// `SQLModel` (or a protocol that refines it: `TimestampedModel`, `SoftDeletableModel`,
/// `SyncedModel`), its SQLite row codec too.
///
/// ```swift
/// @Model(jsonKeys: .snakeCase)
/// struct Post: SQLModel {                              // stored in SQLite too
///     @PrimaryKey var id: Int?
///     var userId: Int                                   // JSON key "user_id"
///     @JSON("body") var text: String                    // explicit key
///     @Transform(.millisecondsSince1970) var publishedAt: Date?
///     var slug: String = ""                             // default when the key is missing
///     @Ignored var isSelected = false                   // never encoded or decoded
/// }
/// ```
///
/// - Parameters:
///   - jsonKeys: how property names become JSON keys (fields with `@JSON` keep theirs).
///   - dates: how this model's `Date` fields are written in JSON; `nil` uses the decoder's or
///     encoder's option.
///   - decodeExcluding: properties never read from JSON (they keep their initial value).
///   - encodeExcluding: properties never written to JSON (e.g. secrets).
///   - table: the SQLite table name; the type's name by default. This and the next
///     parameters matter only for a struct that declares `SQLModel`.
///   - columns: how property names become column names (fields with `@Column("…")` keep
///     theirs).
///   - withoutRowID: declares the table `WITHOUT ROWID` (it needs a primary key).
///   - indexes: indexes over several columns, by property name: `[["userId", "publishedAt"]]`.
///   - unique: groups of properties unique together: `[["userId", "slug"]]`.
///
/// The model may declare hooks that the generated code calls:
/// `static func willDecode(_ json: inout JSONValue) throws` (reshape the raw object before
/// decoding), `mutating func didDecode() throws` (derive or check after decoding) and
/// `func didEncode(_ json: inout JSONValue) throws` (reshape the output object).
///
/// Every relation the struct declares as a static property (`static let author =
/// belongsTo(User.self, onDelete: .cascade)`) is listed in the generated `relations`, so its
/// foreign key and delete rule apply without a second declaration; a struct that declares
/// `relations` itself keeps its own list.
///
/// The SQLite conformance is the struct's own declaration, not the macro's: a macro may only
/// add conformances to protocols its own module knows, and this one is declared in
/// ModelSyncJSON, so that an app that maps JSON alone never links SQLite. Declare it on the
/// struct itself (not in a separate extension), where `@Model` sees it.
///
/// The model is also `Codable` through this codec (`init(from:)` and `encode(to:)` call
/// ``CodableBridge``), so `JSONEncoder`, Vapor and Hummingbird write the same JSON as
/// ``JSONModelEncoder``; a struct that declares `Codable` itself keeps its own conformance.
///
/// A model with a primary key is also ``/ModelSyncCore/KeyedModel``: the macro declares
/// `typealias ModelID` as the key's type (`Int` for `var id: Int?`), so lookups by id are typed
/// by it. Write the key's type when its initializer is not a literal or `UUID()`.
@attached(
    extension,
    conformances: Model, KeyedModel, JSONModel, Decodable, Encodable,
    names: named(schema), named(jsonLayout), named(init(json:)), named(encode(json:)), named(jsonHooks),
    named(sqlTable), named(init(row:)), named(bind(to:)), named(relations), named(relationCache), named(init(from:)), named(encode(to:))
)
@attached(member, names: arbitrary)
public macro Model(
    jsonKeys: KeyStrategy = .useDefaultKeys,
    dates: JSONDateStrategy? = nil,
    decodeExcluding: [String] = [],
    encodeExcluding: [String] = [],
    table: String? = nil,
    columns: KeyStrategy = .useDefaultKeys,
    withoutRowID: Bool = false,
    indexes: [[String]] = [],
    unique: [[String]] = []
) = #externalMacro(module: "ModelSyncMacros", type: "ModelMacro")

/// Marks the primary key of a model; mark several properties for a composite key.
/// Without it, a property named `id` is the primary key.
///
/// An integer key that is nil when a model is inserted gets SQLite's next rowid either way;
/// `autoincrement: true` makes it `AUTOINCREMENT`, so the ids of deleted rows are never reused.
@attached(peer)
public macro PrimaryKey(autoincrement: Bool = false) = #externalMacro(module: "ModelSyncMacros", type: "PrimaryKeyMacro")

/// The SQLite column of a property: its name (by default the property name, or as the
/// model's `columns:` strategy makes it), a `UNIQUE` constraint, an index of its own.
///
/// ```swift
/// @Column("post_slug", unique: true) var slug: String
/// @Column(indexed: true) var userId: Int
/// ```
@attached(peer)
public macro Column(_ name: String? = nil, unique: Bool = false, indexed: Bool = false) =
    #externalMacro(module: "ModelSyncMacros", type: "ColumnMacro")

/// Gives a property an explicit JSON key. A dotted key (`"user.name"`) reaches into a nested
/// object when decoding and builds it when encoding.
@attached(peer)
public macro JSON(_ key: String) = #externalMacro(module: "ModelSyncMacros", type: "JSONKeyMacro")

/// Converts a property to and from JSON with a two-way transformer, e.g.
/// `@Transform(.millisecondsSince1970) var createdAt: Date`.
///
/// By default the transformer shapes JSON only (and so the key-value storage, which stores
/// JSON); a SQLite column keeps the property's own type. With `inDatabase: true`, the same
/// transformer also decides the column of a model that declares `SQLModel`:
///
/// ```swift
/// @Transform(.cents, inDatabase: true) var price: Int          // a TEXT column holding "12.34"
/// @Transform(.millisecondsSince1970, inDatabase: true) var seenAt: Date?   // REAL, NULL for nil
/// ```
///
/// The column then holds the transformer's `JSONRepresentation`: its own column type when it
/// has one (`String`, `Double`, the integers, …), JSON text otherwise (an array or object),
/// and the table's declared column type follows it. Typed queries bind their operands
/// through the transformer (`Product.where(\.price == 1234)` compares with `'12.34'`), and
/// refuse what the stored form cannot express (arithmetic, patterns, aggregates). Turning it
/// on for an existing table changes the column's type: migrate the table.
///
/// - Parameters:
///   - transformer: the conversion, e.g. `.millisecondsSince1970` or your own ``JSONTransformer``.
///   - inDatabase: whether the SQLite column holds the transformer's representation too
///     (default: JSON only, the column holds the property's own type).
@attached(peer)
public macro Transform<T: JSONTransformer>(_ transformer: T, inDatabase: Bool = false) =
    #externalMacro(module: "ModelSyncMacros", type: "TransformMacro")

/// Leaves a property out of the model: it is never encoded, decoded or stored, and keeps its
/// initial value.
@attached(peer)
public macro Ignored() = #externalMacro(module: "ModelSyncMacros", type: "IgnoredMacro")
