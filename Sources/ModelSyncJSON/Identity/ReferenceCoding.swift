import ModelSyncCore

// `Reference<M>` in JSON: an object is the model itself; a bare id (or, for a composite key, an
// array of ids) is a reference, resolved through the identity map in use when it knows the id.

extension Reference: JSONDecodable where M: JSONModel {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Reference<M> {
        let kind = context.tape.nodes[node].kind
        if kind == .object { return .resolved(try M.decodeJSON(node, &context)) }
        let keyTypes = M.schema.fields.filter(\.isPrimaryKey).map(\.type)
        var nodes = [node]
        if kind == .array {
            nodes = []
            var child = node + 1
            for _ in 0..<Int(context.tape.nodes[node].length) {
                nodes.append(child)
                child = Int(context.tape.nodes[child].end)
            }
        }
        guard !keyTypes.isEmpty, nodes.count == keyTypes.count else {
            throw context.mismatch(node, expected: "object or id (\(M.schema.name))")
        }
        var components: [PrimaryKey.Component] = []
        for (child, type) in zip(nodes, keyTypes) {
            guard let component = context.keyComponent(child, as: type) else {
                throw context.mismatch(child, expected: "object or id (\(M.schema.name))")
            }
            components.append(component)
        }
        guard let key = PrimaryKey(components) else {
            throw context.mismatch(node, expected: "object or id (\(M.schema.name))")
        }
        return context.identityMap?.value(M.self, key: key).map(Reference.resolved) ?? .unresolved(key)
    }
}

extension Reference: JSONEncodable where M: JSONModel {
    /// A resolved reference is written as the model's object, an unresolved one as its id.
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        switch self {
        case .resolved(let model):
            try model.encodeJSON(to: &context)
        case .unresolved(let key):
            if key.components.count != 1 { context.writer.writeByte(UInt8(ascii: "[")) }
            for (index, component) in key.components.enumerated() {
                if index > 0 { context.writer.writeByte(UInt8(ascii: ",")) }
                switch component {
                case .integer(let value): context.writer.writeInteger(value)
                case .text(let value): context.writer.writeString(value)
                }
            }
            if key.components.count != 1 { context.writer.writeByte(UInt8(ascii: "]")) }
        }
    }
}
