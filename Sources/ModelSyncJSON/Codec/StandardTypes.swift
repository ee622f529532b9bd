import Foundation
import ModelSyncCore

// JSON conversions of the standard types. Each decoder takes the exact JSON type first (the
// fast path); lenient mode then accepts the documented coercions and records each one.

extension JSONDecodingContext {
    /// The raw bytes of a string node without escapes, for parsers that work on bytes.
    func withStringBytes<R>(_ node: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        let header = tape.nodes[node]
        if header.flags & JSONNode.hasEscapes == 0 {
            let start = Int(header.start)
            return try body(UnsafeBufferPointer(rebasing: tape.bytes[start..<start + Int(header.length)]))
        }
        var text = try tape.string(node)
        return try text.withUTF8(body)
    }

    mutating func coerced(_ node: Int, to type: String) {
        record(.coerced(from: tape.describe(node), to: type), at: node)
    }
}

// MARK: - Integers

extension JSONDecodable where Self: FixedWidthInteger {
    public static var jsonZeroValue: Self? { 0 }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Self {
        let header = context.tape.nodes[node]
        if header.kind == .number, header.flags & JSONNode.isFloat == 0 {
            if let value = context.tape.int64(node), let exact = Self(exactly: value) { return exact }
            if let value = context.tape.uint64(node), let exact = Self(exactly: value) { return exact }
            throw context.error(.numberOutOfRange(context.tape.rawText(node), type: "\(Self.self)"), at: node)
        }
        if header.kind == .number {
            // JSON has one number type: 3.0 and 3e2 are integers when they are whole.
            return try integer(fromDouble: context.tape.double(node), node, &context)
        }
        if header.kind == .string, context.isLenient {
            let parsed = try context.withStringBytes(node) { bytes in
                (JSONTape.parseInt64(bytes), JSONTape.parseDouble(bytes))
            }
            if let value = parsed.0, let exact = Self(exactly: value) {
                context.coerced(node, to: "\(Self.self)")
                return exact
            }
            if let double = parsed.1 {
                let value = try integer(fromDouble: double, node, &context)
                context.coerced(node, to: "\(Self.self)")
                return value
            }
        }
        throw context.mismatch(node, expected: "\(Self.self)")
    }

    private static func integer(fromDouble double: Double, _ node: Int, _ context: inout JSONDecodingContext) throws -> Self {
        guard double.rounded(.towardZero) == double, double.isFinite else {
            throw context.mismatch(node, expected: "\(Self.self)")
        }
        guard let exact = Self(exactly: double) else {
            throw context.error(.numberOutOfRange(context.tape.describe(node), type: "\(Self.self)"), at: node)
        }
        return exact
    }
}

extension JSONEncodable where Self: FixedWidthInteger {
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeInteger(self)
    }
}

extension Int: JSONCodable {}
extension Int8: JSONCodable {}
extension Int16: JSONCodable {}
extension Int32: JSONCodable {}
extension Int64: JSONCodable {}
extension UInt: JSONCodable {}
extension UInt8: JSONCodable {}
extension UInt16: JSONCodable {}
extension UInt32: JSONCodable {}
extension UInt64: JSONCodable {}

// MARK: - Floating point

extension Double: JSONCodable {
    public static var jsonZeroValue: Double? { 0 }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Double {
        let kind = context.tape.nodes[node].kind
        if kind == .number {
            let value = context.tape.double(node)
            guard value.isFinite else {
                throw context.error(.numberOutOfRange(context.tape.rawText(node), type: "Double"), at: node)
            }
            return value
        }
        if kind == .string, context.isLenient,
           let value = try context.withStringBytes(node, { JSONTape.parseDouble($0) }), value.isFinite {
            context.coerced(node, to: "Double")
            return value
        }
        throw context.mismatch(node, expected: "Double")
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        // Whole numbers print without a fraction (as Foundation does): 3 rather than 3.0.
        if rounded(.towardZero) == self, abs(self) < 9_007_199_254_740_992 {
            context.writer.writeInteger(Int64(self))
        } else {
            try context.writer.writeDouble(self)
        }
    }
}

extension Float: JSONCodable {
    public static var jsonZeroValue: Float? { 0 }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Float {
        let value = try Double.decodeJSON(node, &context)
        guard abs(value) <= Double(Float.greatestFiniteMagnitude) else {
            throw context.error(.numberOutOfRange(context.tape.describe(node), type: "Float"), at: node)
        }
        return Float(value)
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        guard isFinite else {
            throw JSONError(.invalidValue("cannot encode non-finite number \(self)"))
        }
        // Float's own shortest text (0.1, not 0.10000000149011612).
        context.writer.writeRaw(Array(description.utf8))
    }
}

// MARK: - Bool and String

extension Bool: JSONCodable {
    public static var jsonZeroValue: Bool? { false }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Bool {
        switch context.tape.nodes[node].kind {
        case .true: return true
        case .false: return false
        case .number where context.isLenient:
            if let value = context.tape.int64(node), value == 0 || value == 1 {
                context.coerced(node, to: "Bool")
                return value == 1
            }
        case .string where context.isLenient:
            switch try context.tape.string(node).lowercased() {
            case "true", "1", "yes":
                context.coerced(node, to: "Bool")
                return true
            case "false", "0", "no":
                context.coerced(node, to: "Bool")
                return false
            default: break
            }
        default: break
        }
        throw context.mismatch(node, expected: "Bool")
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeBool(self)
    }
}

extension String: JSONCodable {
    public static var jsonZeroValue: String? { "" }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> String {
        switch context.tape.nodes[node].kind {
        case .string:
            return try context.tape.string(node)
        case .number where context.isLenient:
            context.coerced(node, to: "String")
            return context.tape.rawText(node)
        case .true where context.isLenient, .false where context.isLenient:
            context.coerced(node, to: "String")
            return context.tape.nodes[node].kind == .true ? "true" : "false"
        default:
            throw context.mismatch(node, expected: "String")
        }
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeString(self)
    }
}

// MARK: - Foundation types

extension Date: JSONCodable {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Date {
        try context.dateStrategy.decode(node, &context)
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        try context.dateStrategy.encode(self, &context)
    }
}

extension URL: JSONCodable {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> URL {
        let text = try context.string(node)
        guard !text.isEmpty, let url = URL(string: text) else {
            throw context.error(.invalidValue("\"\(text)\" is not a URL"), at: node)
        }
        return url
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeString(absoluteString)
    }
}

extension UUID: JSONCodable {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> UUID {
        let text = try context.string(node)
        guard let uuid = UUID(uuidString: text) else {
            throw context.error(.invalidValue("\"\(text)\" is not a UUID"), at: node)
        }
        return uuid
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        // RFC 9562 asks for lower case on output; decoding accepts either.
        context.writer.writeString(uuidString.lowercased())
    }
}

extension Data: JSONCodable {
    public static var jsonZeroValue: Data? { Data() }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Data {
        let text = try context.string(node)
        guard let data = Data(base64Encoded: text) else {
            throw context.error(.invalidValue("the string is not valid Base64"), at: node)
        }
        return data
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeString(base64EncodedString())
    }
}

extension Decimal: JSONCodable {
    public static var jsonZeroValue: Decimal? { 0 }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Decimal {
        // Read from the source text, so 0.1 stays exactly 0.1.
        let kind = context.tape.nodes[node].kind
        let text: String
        if kind == .number {
            text = context.tape.rawText(node)
        } else if kind == .string, context.isLenient {
            text = try context.tape.string(node)
            context.coerced(node, to: "Decimal")
        } else {
            throw context.mismatch(node, expected: "Decimal")
        }
        guard let value = Decimal(string: text, locale: posixLocale), !value.isNaN else {
            throw context.error(.invalidValue("\"\(text)\" is not a decimal number"), at: node)
        }
        return value
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        guard !isNaN else { throw JSONError(.invalidValue("cannot encode NaN")) }
        context.writer.writeRaw(Array(description.utf8))
    }
}

/// JSON numbers use `.` whatever the user's locale; made once rather than per value.
private let posixLocale = Locale(identifier: "en_US_POSIX")

// MARK: - Enums with raw values

extension JSONDecodable where Self: RawRepresentable, RawValue: JSONDecodable {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Self {
        let raw = try RawValue.decodeJSON(node, &context)
        guard let value = Self(rawValue: raw) else {
            var message = "\(context.tape.describe(node)) is not a valid \(Self.self)"
            if let cases = Self.self as? any CaseIterable.Type {
                let names = cases.allCasesDescriptions.joined(separator: ", ")
                message += " (expected one of: \(names))"
            }
            throw context.error(.invalidValue(message), at: node)
        }
        return value
    }
}

extension CaseIterable {
    fileprivate static var allCasesDescriptions: [String] {
        allCases.map { value in
            if let raw = (value as? any RawRepresentable)?.rawValue { return "\(raw)" }
            return "\(value)"
        }
    }
}

extension JSONEncodable where Self: RawRepresentable, RawValue: JSONEncodable {
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        try rawValue.encodeJSON(to: &context)
    }
}

// MARK: - Containers

extension Optional: JSONDecodable where Wrapped: JSONDecodable {
    public static var jsonZeroValue: Wrapped?? { .some(nil) }
    public static var isJSONNullable: Bool { true }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Wrapped? {
        if context.tape.nodes[node].kind == .null { return nil }
        return try Wrapped.decodeJSON(node, &context)
    }
}

extension Optional: JSONEncodable where Wrapped: JSONEncodable {
    public var isJSONNull: Bool { self == nil }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        if let self {
            try self.encodeJSON(to: &context)
        } else {
            context.writer.writeNull()
        }
    }
}

extension Array: JSONDecodable where Element: JSONDecodable {
    public static var jsonZeroValue: [Element]? { [] }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> [Element] {
        let header = context.tape.nodes[node]
        guard header.kind == .array else {
            if context.isLenient, header.kind != .null {
                // One value where a list is expected: a list of one (APIs do this for single results).
                let element = try Element.decodeJSON(node, &context)
                context.record(.wrappedInArray, at: node)
                return [element]
            }
            throw context.mismatch(node, expected: "array of \(Element.self)")
        }
        var result: [Element] = []
        result.reserveCapacity(Int(header.length))
        var child = node + 1
        for _ in 0..<Int(header.length) {
            if context.options.dropsInvalidElements {
                do {
                    result.append(try Element.decodeJSON(child, &context))
                } catch var error as JSONError {
                    context.locate(&error)
                    context.record(.droppedElement(error), at: child)
                }
            } else {
                result.append(try Element.decodeJSON(child, &context))
            }
            child = Int(context.tape.nodes[child].end)
        }
        return result
    }
}

extension Array: JSONEncodable where Element: JSONEncodable {
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        context.writer.writeByte(UInt8(ascii: "["))
        for (index, element) in enumerated() {
            if index > 0 { context.writer.writeByte(UInt8(ascii: ",")) }
            do {
                try element.encodeJSON(to: &context)
            } catch var error as JSONError {
                error.path = JSONPath([.index(index)] + error.path.components)
                throw error
            }
        }
        context.writer.writeByte(UInt8(ascii: "]"))
    }
}

extension Dictionary: JSONDecodable where Key == String, Value: JSONDecodable {
    public static var jsonZeroValue: [String: Value]? { [:] }

    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> [String: Value] {
        let header = context.tape.nodes[node]
        guard header.kind == .object else {
            throw context.mismatch(node, expected: "object of \(Value.self)")
        }
        var result: [String: Value] = [:]
        result.reserveCapacity(Int(header.length))
        var key = node + 1
        for _ in 0..<Int(header.length) {
            result[try context.tape.string(key)] = try Value.decodeJSON(key + 1, &context)
            key = Int(context.tape.nodes[key + 1].end)
        }
        return result
    }
}

extension Dictionary: JSONEncodable where Key == String, Value: JSONEncodable {
    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        // Sorted keys: the same dictionary always encodes to the same bytes.
        context.writer.writeByte(UInt8(ascii: "{"))
        for (index, key) in keys.sorted().enumerated() {
            if index > 0 { context.writer.writeByte(UInt8(ascii: ",")) }
            context.writer.writeString(key)
            context.writer.writeByte(UInt8(ascii: ":"))
            do {
                try self[key]?.encodeJSON(to: &context)
            } catch var error as JSONError {
                error.path = JSONPath([.key(key)] + error.path.components)
                throw error
            }
        }
        context.writer.writeByte(UInt8(ascii: "}"))
    }
}

/// Any JSON as a model field: itself in JSON; in SQLite, a `TEXT` column of its JSON text.
extension JSONValue: FieldValue {
    public static var fieldType: FieldType { .custom(name: "JSONValue") }
}

extension JSONValue: JSONCodable {
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> JSONValue {
        try context.value(node)
    }

    public static var isJSONNullable: Bool { true }
    public static var jsonZeroValue: JSONValue? { .null }
    public var isJSONNull: Bool { self == .null }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        write(to: &context.writer)
    }
}
