import ModelSyncCore

/// What lenient decoding had to do to turn a document into models: every coercion, default and
/// dropped element, each with its path. Read it to see schema drift before it becomes a bug.
public struct DecodeReport: Sendable, Equatable, CustomStringConvertible {
    /// One step, at one place in the document.
    public struct Entry: Sendable, Equatable, CustomStringConvertible {
        /// Where in the document, e.g. `posts[3].user.id`.
        public var path: JSONPath
        /// What was done.
        public var kind: Kind

        /// Creates an entry.
        public init(path: JSONPath, kind: Kind) {
            self.path = path
            self.kind = kind
        }

        public var description: String { "\(path): \(kind)" }
    }

    /// The kinds of lenient steps.
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// A value of another JSON type was converted, e.g. `from: "string \"49\"", to: "Int"`.
        case coerced(from: String, to: String)
        /// A missing key took the property's declared default.
        case defaultForMissingKey
        /// A missing key took the zero value of the type (no declared default).
        case zeroForMissingKey
        /// `null` for a non-optional property took its declared default.
        case defaultForNull
        /// `null` for a non-optional property took the zero value of the type.
        case zeroForNull
        /// A single value stood where an array was expected and became a one-element array.
        case wrappedInArray
        /// An array element failed to decode and was left out; the error says why.
        case droppedElement(JSONError)

        public var description: String {
            switch self {
            case .coerced(let from, let to): "coerced \(from) to \(to)"
            case .defaultForMissingKey: "missing key, used the declared default"
            case .zeroForMissingKey: "missing key, used the zero value"
            case .defaultForNull: "null, used the declared default"
            case .zeroForNull: "null, used the zero value"
            case .wrappedInArray: "single value wrapped in an array"
            case .droppedElement(let error): "dropped element: \(error)"
            }
        }
    }

    /// The steps, in document order of discovery.
    public var entries: [Entry]

    /// Creates a report.
    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// Whether decoding needed no lenient step at all.
    public var isEmpty: Bool { entries.isEmpty }

    public var description: String {
        entries.isEmpty ? "no lenient steps" : entries.map(\.description).joined(separator: "\n")
    }
}
