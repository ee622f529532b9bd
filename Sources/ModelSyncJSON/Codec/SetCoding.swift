import ModelSyncCore

// `Set` fields: a JSON array (and JSON text in SQLite, as arrays are).

extension Set: JSONDecodable where Element: JSONDecodable {
    public static var jsonZeroValue: Set<Element>? { [] }

    /// Reads an array as `[Element]` does (the same errors, lenient rules and report), then
    /// keeps one of each equal element, as Foundation's decoder does.
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Set<Element> {
        Set(try [Element].decodeJSON(node, &context))
    }
}

extension Set: JSONEncodable where Element: JSONEncodable {
    /// Writes an array with the elements sorted by their JSON bytes: a set's iteration order
    /// differs between equal sets, and equal values must write equal JSON (ETags, drafts,
    /// stored text).
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        let start = context.writer.bytes.count
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(count)
        for (index, element) in enumerated() {
            let elementStart = context.writer.bytes.count
            do {
                try element.encodeJSON(to: &context)
            } catch var error as JSONError {
                error.path = JSONPath([.index(index)] + error.path.components)
                throw error
            }
            ranges.append(elementStart..<context.writer.bytes.count)
        }
        let elements = ranges.map { context.writer.bytes[$0] }.sorted { $0.lexicographicallyPrecedes($1) }
        context.writer.bytes.removeSubrange(start...)
        context.writer.writeByte(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { context.writer.writeByte(UInt8(ascii: ",")) }
            context.writer.bytes.append(contentsOf: element)
        }
        context.writer.writeByte(UInt8(ascii: "]"))
    }
}
