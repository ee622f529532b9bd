/// An enum with a raw value that can be a model field:
/// `enum Role: String, ModelEnum { case admin, member }`.
///
/// It is stored as its raw value; an unknown raw value is a decoding error that names it.
public protocol ModelEnum: RawRepresentable, FieldValue, JSONCodable, SQLColumnCodable
where RawValue: FieldValue & JSONCodable & SQLColumnCodable {}
