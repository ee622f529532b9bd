import ModelSyncCore
import ModelSyncJSON

/// An enum with a raw value that can be a model field:
/// `enum Role: String, ModelEnum { case admin, member }`.
///
/// It is stored as its raw value, in JSON and in SQLite; an unknown raw value is a decoding
/// error that names it. Without the SQLite layer, declare `FieldValue, JSONCodable` instead:
/// the JSON form is the same.
public protocol ModelEnum: RawRepresentable, FieldValue, JSONCodable, SQLColumnCodable
where RawValue: FieldValue & JSONCodable & SQLColumnCodable {}
