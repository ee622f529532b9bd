import ModelSyncCore

extension JSONModelEncoder {
    /// Encodes only the properties `fields` (Swift names) of `model`: the body of a partial
    /// update (`PATCH`). Keys follow the model's and the options' key strategies, dotted keys
    /// become nested objects, and nil is written as `null` (a cleared field must be sent).
    /// Properties that the model excludes from encoding are left out.
    ///
    /// - Throws: ``JSONError`` for a name that is not a field of the model, or when a value
    ///   cannot be encoded.
    public func encodeToValue<M: JSONModel>(_ model: M, fields: some Sequence<String>) throws -> JSONValue {
        var options = self.options
        options.nilEncoding = .null
        options.prettyPrinted = false
        let encoder = JSONModelEncoder(options: options)
        let whole = try encoder.encodeToValue(model)
        let layout = encoder.layout(for: M.self)
        var body = JSONValue.object(JSONObject())
        for name in fields {
            guard M.schema.field(named: name) != nil else {
                throw JSONError(.invalidValue("\(M.schema.name) has no field \"\(name)\""))
            }
            if let path = Self.fieldPath(of: name, in: layout), let value = whole[path] { body[path] = value }
        }
        return body
    }

    /// Encodes only the properties `fields` of `model` to UTF-8 bytes, optionally inside an
    /// envelope; see ``encodeToValue(_:fields:)``.
    public func encode<M: JSONModel>(_ model: M, fields: some Sequence<String>, at root: JSONPath = JSONPath()) throws -> [UInt8] {
        bytes(of: try encodeToValue(model, fields: fields), at: root)
    }
}

extension Draft where M: JSONModel {
    /// The body of a partial update (`PATCH`) holding exactly the draft's
    /// ``/ModelSyncCore/Draft/changedFields``, optionally inside an envelope (`at: "data"`).
    public func patchBody(encoder: JSONModelEncoder = JSONModelEncoder(), at root: JSONPath = JSONPath()) throws -> [UInt8] {
        try encoder.encode(model, fields: changedFields, at: root)
    }
}
