import Foundation

/// A root array that decodes element by element off a `JSONElementReader`, without a tape for
/// the whole document. `Array` of any ``JSONDecodable`` is one.
protocol JSONElementsDecodable {
    /// Decodes every element the reader yields, with the same results, report and errors as
    /// ``JSONDecodable/decodeJSON(_:_:)`` on the whole document.
    static func decodeElements(_ reader: inout JSONElementReader, _ context: inout JSONDecodingContext) throws -> Self
}

extension Array: JSONElementsDecodable where Element: JSONDecodable {
    static func decodeElements(_ reader: inout JSONElementReader, _ context: inout JSONDecodingContext) throws -> [Element] {
        var result: [Element] = []
        while try reader.next() {
            if result.count == result.capacity {
                let stride = MemoryLayout<Element>.stride
                result.reserveCapacity(reader.predictedCapacity(keeping: result.count, elementStride: stride))
            }
            do {
                try context.decodeElement(Element.self, of: reader) { result.append($0) }
            } catch {
                // A syntax error further on wins, as when the whole document is parsed first.
                try reader.validateRest()
                throw error
            }
        }
        return result
    }
}

extension JSONDecodingContext {
    /// Decodes the reader's current element as a `T`, with errors and report entries located
    /// under its index, and hands it to `use`; when it fails and the options drop invalid
    /// elements, `use` is not called (the report says so).
    ///
    /// The element is moved into `use`, not returned: code not specialised for `T` would copy
    /// and destroy every element on its way through an optional.
    mutating func decodeElement<T: JSONDecodable>(
        _ type: T.Type, of reader: JSONElementReader, _ use: (consuming T) -> Void
    ) throws {
        let index = reader.count - 1
        try reader.withTape { tape in
            self.tape = tape
            let element: T
            do {
                element = try T.decodeJSON(0, &self)
            } catch var error as JSONError {
                locate(&error)
                error.path = JSONPath([.index(index)] + error.path.components)
                guard options.dropsInvalidElements else { throw error }
                record(.droppedElement(error), at: 0)
                return
            }
            use(element)
        }
        settleEntries(under: .index(index))
    }
}

extension JSONModelDecoder {
    /// Decodes a root array of `T` element by element (see `JSONElementReader`) when `T` is an
    /// array and `source` is raw input that holds one, of at least
    /// `options.elementByElementMinimumBytes`; nil otherwise.
    func decodeElements<T: JSONDecodable>(
        _ type: T.Type, from source: some JSONSource
    ) throws -> (value: T, report: DecodeReport)? {
        guard let arrayType = T.self as? any JSONElementsDecodable.Type else { return nil }
        return try withInputBytes(source) { bytes -> (value: T, report: DecodeReport)? in
            guard bytes.count >= options.elementByElementMinimumBytes,
                var reader = try JSONElementReader(bytes: bytes, maxDepth: options.maxDepth)
            else { return nil }
            var context = JSONDecodingContext(tape: reader.emptyTape, options: options)
            let value: any JSONElementsDecodable
            do {
                value = try arrayType.decodeElements(&reader, &context)
            } catch let error as JSONError {
                throw error
            } catch {
                // A custom JSONDecodable threw its own error.
                throw JSONError(wrapping: error)
            }
            guard let value = value as? T else { return nil }
            return (value, context.resolvedReport())
        } ?? nil
    }

    /// Calls `body` with the UTF-8 bytes of raw input (bytes, `Data`, a `String`) without
    /// copying them; nil for input that is already parsed.
    func withInputBytes<R>(_ source: some JSONSource, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        if let bytes = source as? [UInt8] { return try bytes.withUnsafeBufferPointer(body) }
        if let data = source as? Data { return try data.withUnsafeBytes { try body($0.bindMemory(to: UInt8.self)) } }
        if var string = source as? String { return try string.withUTF8(body) }
        return nil
    }
}
