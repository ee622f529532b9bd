// Turn a `ModelDescription` into source text. Each emitter returns one member of the
// extension, indented for the extension body, so a new feature (a SQL table, say) is a
// new emitter plus one line in `ModelMacro`. The text is what users see with
// "Expand Macro": one statement per line, 4-space indentation.

private let indent = "    "

/// `extension Post: ModelSyncCore.Model, ModelSyncJSON.JSONModel { ... }`. Generated code
/// names each type by the module that declares it, which the file sees through whichever of
/// our modules it imports (each re-exports the layers below it).
func extensionSource(extendedType: String, conformances: [String], members: [String]) -> String {
    let inheritance = conformances.isEmpty ? "" : ": " + conformances.joined(separator: ", ")
    return "extension \(extendedType)\(inheritance) {\n" + members.joined(separator: "\n") + "\n}"
}

private func accessPrefix(_ model: ModelDescription) -> String {
    model.accessModifier.map { $0 + " " } ?? ""
}

// MARK: - Schema

func schemaDecl(_ model: ModelDescription) -> String {
    let fieldIndent = indent + indent + indent
    var arguments = ["name: \(stringLiteral(model.name))"]
    if model.fields.isEmpty {
        arguments.append("fields: []")
    } else {
        let fields = model.fields.map { fieldIndent + fieldSchema($0, indentation: fieldIndent) + ",\n" }
        arguments.append("fields: [\n" + fields.joined() + indent + indent + "]")
    }
    if let jsonKeys = model.jsonKeys {
        arguments.append("jsonKeys: \(jsonKeys)")
    }
    if let table = model.table {
        arguments.append("table: \(stringLiteral(table))")
    }
    if let columns = model.columns {
        arguments.append("columns: \(columns)")
    }
    if model.withoutRowID {
        arguments.append("withoutRowID: true")
    }
    if !model.indexes.isEmpty {
        arguments.append("indexes: \(nameGroups(model.indexes))")
    }
    if !model.unique.isEmpty {
        arguments.append("unique: \(nameGroups(model.unique))")
    }
    return indent + "\(accessPrefix(model))static let schema = ModelSyncCore.ModelSchema(\n"
        + arguments.map { indent + indent + $0 }.joined(separator: ",\n")
        + "\n" + indent + ")"
}

/// `\Self.name`: the property's type comes from its declaration, so generated code never
/// names a type. (Spelled out, `Role` in `extension NS.User` would resolve at file scope,
/// not to a sibling `NS.Role`.) After `Self.`, `Type` and `Protocol` would mean the
/// metatype even in backticks, so those two go through the identity component.
private func keyPath(_ field: FieldDescription) -> String {
    field.name == "Type" || field.name == "Protocol"
        ? "\\Self.self.\(field.identifier)" : "\\Self.\(field.identifier)"
}

/// `ModelSyncCore.FieldSchema(...)`; labels appear only for non-default values.
private func fieldSchema(_ field: FieldDescription, indentation: String) -> String {
    var arguments = ["name: \(stringLiteral(field.name))", "keyPath: \(keyPath(field))"]
    if let jsonKey = field.jsonKey {
        arguments.append("jsonKey: \(stringLiteral(jsonKey))")
    }
    if let column = field.column {
        arguments.append("column: \(stringLiteral(column))")
    }
    if field.isPrimaryKey {
        arguments.append("isPrimaryKey: true")
    }
    if field.isAutoincrement {
        arguments.append("isAutoincrement: true")
    }
    if field.isUnique {
        arguments.append("isUnique: true")
    }
    if field.isIndexed {
        arguments.append("isIndexed: true")
    }
    if let transformer = field.transformer {
        arguments.append("transformer: \(stringLiteral(transformer.text))")
    }
    if let value = field.defaultValue {
        // The closure's result type is the key path's value type, so the default is
        // type-checked against the property's type without a cast.
        arguments.append(
            "defaultValue: ModelSyncCore.FieldDefault(source: \(stringLiteral(value.text)), for: \(keyPath(field))) "
                + "{ \(defaultCall(field)) }"
        )
    }
    if !field.decodes {
        arguments.append("decodes: false")
    }
    if !field.encodes {
        arguments.append("encodes: false")
    }
    return "ModelSyncCore.FieldSchema(" + arguments.joined(separator: ", ") + ")"
}

func jsonLayoutDecl(_ model: ModelDescription) -> String {
    let dates = model.dates.map { ", dates: \($0)" } ?? ""
    return indent + "\(accessPrefix(model))static let jsonLayout = ModelSyncJSON.JSONLayout(schema: schema\(dates))"
}

/// `nil` when the struct declares no hooks, so the protocol's default applies.
func jsonHooksDecl(_ model: ModelDescription) -> String? {
    guard !model.hooks.isEmpty else { return nil }
    let hooks = model.hooks.map { "." + $0.rawValue }.joined(separator: ", ")
    return indent + "\(accessPrefix(model))static let jsonHooks: ModelSyncJSON.JSONHooks = [\(hooks)]"
}

// MARK: - JSON codec

func jsonDecoderInitDecl(_ model: ModelDescription) -> String {
    let bodyIndent = indent + indent
    // A field excluded from decoding is read only in the storage format (`decodeStored`).
    let lines = model.fields.enumerated().filter { $0.element.decodes || $0.element.isAssignable }.map { index, field in
        // The value type is inferred from the assignment to the property.
        var arguments = ["\(index)"]
        if let transformer = field.transformer {
            arguments.append("using: \(transformer.indented(by: bodyIndent))")
        }
        if field.defaultValue != nil {
            arguments.append("default: \(defaultCall(field))")
        } else if !field.decodes {
            arguments.append("default: nil")  // the implicit nil of a `var x: T?`
        }
        let method = field.decodes ? "decode" : "decodeStored"
        return bodyIndent + "self.\(field.identifier) = try decoder.\(method)(\(arguments.joined(separator: ", ")))\n"
    }
    return indent + "\(accessPrefix(model))init(json decoder: inout ModelSyncJSON.JSONObjectDecoder) throws {\n"
        + lines.joined() + indent + "}"
}

func jsonEncodeDecl(_ model: ModelDescription) -> String {
    let bodyIndent = indent + indent
    // A field excluded from encoding is written only in the storage format (`encodeStored`).
    let lines = model.fields.enumerated().map { index, field in
        var arguments = ["self.\(field.identifier)", "\(index)"]
        if let transformer = field.transformer {
            arguments.append("using: \(transformer.indented(by: bodyIndent))")
        }
        let method = field.encodes ? "encode" : "encodeStored"
        return bodyIndent + "try encoder.\(method)(\(arguments.joined(separator: ", ")))\n"
    }
    return indent + "\(accessPrefix(model))func encode(json encoder: inout ModelSyncJSON.JSONObjectEncoder) throws {\n"
        + lines.joined() + indent + "}"
}

// MARK: - Codable

/// `Decodable` through the generated codec, so Foundation's coders see the model's JSON.
func codableDecoderInitDecl(_ model: ModelDescription) -> String {
    let decode = "try ModelSyncJSON.CodableBridge.decode(Self.self, from: decoder)"
    guard model.cachesRelations else {
        return indent + "\(accessPrefix(model))init(from decoder: any Swift.Decoder) throws {\n"
            + indent + indent + "self = \(decode)\n" + indent + "}"
    }
    // The relation cache is a `let` with a value: `self =` would initialise it twice.
    let copies = model.fields.filter(\.isAssignable).map { field in
        indent + indent + "self.\(field.identifier) = decoded.\(field.identifier)\n"
    }
    return indent + "\(accessPrefix(model))init(from decoder: any Swift.Decoder) throws {\n"
        + indent + indent + "let decoded = \(decode)\n" + copies.joined() + indent + "}"
}

/// `Encodable` through the generated codec.
func codableEncodeDecl(_ model: ModelDescription) -> String {
    indent + "\(accessPrefix(model))func encode(to encoder: any Swift.Encoder) throws {\n"
        + indent + indent + "try ModelSyncJSON.CodableBridge.encode(self, to: encoder)\n"
        + indent + "}"
}

// MARK: - Defaults

/// The name of the static member that holds a property's initializer.
private func defaultMemberName(_ field: FieldDescription) -> String {
    "_modelSyncDefault_" + field.name
}

/// `Self._modelSyncDefault_point()`: the initializer, evaluated where it was written.
private func defaultCall(_ field: FieldDescription) -> String {
    "Self.\(defaultMemberName(field))()"
}

/// One static member per property initializer, added to the struct's own body (not to the
/// extension), so the expression resolves names in the declaration's scope: a sibling type of
/// a nested model is not visible from an extension.
func defaultMemberDecls(_ model: ModelDescription) -> [String] {
    model.fields.compactMap { field in
        guard let value = field.defaultValue else { return nil }
        return "\(accessPrefix(model))static let \(defaultMemberName(field)) = ModelSyncJSON.DeclaredDefault(for: \(keyPath(field))) {\n"
            + indent + value.indented(by: indent) + "\n}"
    }
}

/// `[["a", "b"], ["c"]]`
private func nameGroups(_ groups: [[String]]) -> String {
    "[" + groups.map { "[" + $0.map(stringLiteral).joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
}

// MARK: - SQL row codec

/// The fields stored through their transformer (`@Transform(…, inDatabase: true)`) are listed
/// with it, so that the DDL and the queries see the column's own type.
func sqlTableDecl(_ model: ModelDescription) -> String {
    let prefix = indent + "\(accessPrefix(model))static let sqlTable = ModelSyncSQLite.SQLTable(schema: schema"
    let itemIndent = indent + indent
    let items = model.fields.enumerated().compactMap { index, field -> String? in
        guard let transformer = columnTransformer(field) else { return nil }
        return itemIndent + "ModelSyncSQLite.SQLColumnTransform(\(index), \(keyPath(field)), using: \(transformer.indented(by: itemIndent))),\n"
    }
    guard !items.isEmpty else { return prefix + ")" }
    return prefix + ", transforms: [\n" + items.joined() + indent + "])"
}

/// The transformer of a field whose column holds the transformer's representation.
private func columnTransformer(_ field: FieldDescription) -> SourceSnippet? {
    field.transformsColumn ? field.transformer : nil
}

/// `, using: <transformer>` in the row codec, for such a field.
private func columnUsing(_ field: FieldDescription) -> String {
    columnTransformer(field).map { ", using: " + $0.indented(by: indent + indent) } ?? ""
}

/// Every field is stored, whatever its JSON exclusions; column `i` of the row is field `i`.
func rowDecoderInitDecl(_ model: ModelDescription) -> String {
    let lines = model.fields.enumerated().map { index, field in
        indent + indent + "self.\(field.identifier) = try row.decode(\(index)\(columnUsing(field)))\n"
    }
    return indent + "\(accessPrefix(model))init(row: inout ModelSyncSQLite.SQLRowDecoder) throws {\n"
        + lines.joined() + indent + "}"
}

func rowBindDecl(_ model: ModelDescription) -> String {
    let lines = model.fields.enumerated().map { index, field in
        indent + indent + "try row.encode(self.\(field.identifier), \(index)\(columnUsing(field)))\n"
    }
    return indent + "\(accessPrefix(model))func bind(to row: inout ModelSyncSQLite.SQLRowEncoder) throws {\n"
        + lines.joined() + indent + "}"
}

/// `static var relations { [Self.author, Self.editor] }`: every relation the struct declares
/// applies its rules (foreign keys, delete rules) without a second list; `nil` when there is
/// none, or when the struct declares `relations` itself.
func relationsDecl(_ model: ModelDescription) -> String? {
    guard let relations = model.relations, !relations.isEmpty else { return nil }
    let list = relations.map { "Self.\($0)" }.joined(separator: ", ")
    return indent + "\(accessPrefix(model))static var relations: [any ModelSyncSQLite.ModelRelation<Self>] {\n"
        + indent + indent + "[\(list)]\n" + indent + "}"
}

/// `typealias ModelID = Int`, inside the struct, where the key's type resolves as its
/// declaration does (from an extension, a sibling type of a nested struct would not).
func modelIDDecl(_ model: ModelDescription) -> String? {
    model.modelIDType.map { "\(accessPrefix(model))typealias ModelID = \($0)" }
}

/// The stored property that holds a value's loaded relations, in the struct itself (extensions
/// cannot add stored properties). A `let` with a value: no memberwise initializer parameter.
func relationCacheMemberDecl(_ model: ModelDescription) -> String? {
    guard model.cachesRelations else { return nil }
    return "\(accessPrefix(model))let _modelSyncRelationCache = ModelSyncSQLite.RelationCache()"
}

/// `var relationCache`, the `SQLModel` requirement, reading that property.
func relationCacheDecl(_ model: ModelDescription) -> String? {
    guard model.cachesRelations else { return nil }
    return indent + "\(accessPrefix(model))var relationCache: ModelSyncSQLite.RelationCache? {\n"
        + indent + indent + "_modelSyncRelationCache\n" + indent + "}"
}
