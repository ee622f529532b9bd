/// A location inside a JSON document: a list of object keys and array indices.
///
/// Its description reads like code: `posts[3].user.id`. Parse one from the same form with
/// ``init(parsing:)``; it is used for envelope root keys (`meta.items`) and for JSON keys that
/// reach into nested objects (`user.name`).
public struct JSONPath: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// One step of a path.
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    /// The steps, outermost first.
    public var components: [Component]

    /// Creates a path from its steps.
    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// Parses `a.b[2].c`: dots separate keys and `[n]` selects an array element.
    /// A key that itself contains a dot cannot be written in this form; build the path from
    /// components instead.
    public init(parsing text: String) {
        var components: [Component] = []
        for part in text.split(separator: ".", omittingEmptySubsequences: true) {
            var rest = Substring(part)
            if let bracket = rest.firstIndex(of: "[") {
                let key = rest[..<bracket]
                if !key.isEmpty { components.append(.key(String(key))) }
                rest = rest[bracket...]
                while rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                    let digits = rest[rest.index(after: rest.startIndex)..<close]
                    if let index = Int(digits) {
                        components.append(.index(index))
                    } else {
                        components.append(.key(String(rest[...close])))
                    }
                    rest = rest[rest.index(after: close)...]
                }
                if !rest.isEmpty { components.append(.key(String(rest))) }
            } else {
                components.append(.key(String(rest)))
            }
        }
        self.components = components
    }

    public init(stringLiteral value: String) {
        self.init(parsing: value)
    }

    /// Whether the path points at the document root.
    public var isEmpty: Bool { components.isEmpty }

    /// This path followed by `other`.
    public func appending(_ other: JSONPath) -> JSONPath {
        JSONPath(components + other.components)
    }

    /// This path followed by one more step.
    public func appending(_ component: Component) -> JSONPath {
        JSONPath(components + [component])
    }

    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += key
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}
