import CSQLite
import Foundation
import ModelSyncCore

/// The field of each key path of a model, built once per ``SQLTable``, so that the builder
/// resolves a key path with one hash lookup instead of comparing it with every field.
///
/// It also knows the key paths into nested models stored as JSON text (`\Post.address.city`),
/// each with the JSON path of its value in the column's storage format (property names).
struct KeyPathIndex: @unchecked Sendable {  // key paths are immutable; `AnyKeyPath` just is not marked Sendable
    /// What a key path reaches.
    enum Target {
        /// A field: its index in the schema.
        case field(Int)
        /// A value inside the JSON text of a field (a nested model's property).
        case nested(field: Int, jsonPath: String)
    }

    /// Nested models deeper than this are not indexed (a model nesting itself through a
    /// non-optional chain cannot exist, but a long chain of distinct ones can).
    private static let maximumNesting = 4

    private var targets: [AnyKeyPath: Target] = [:]
    /// The fields of key path objects seen before, by identity: a key path literal is one object
    /// wherever it runs, so a query built per call finds its column by comparing pointers
    /// instead of hashing the path (which walks its components).
    private let seen = KeyPathIdentities()

    /// `transformed`: the fields whose columns hold a transformer's representation, whose JSON
    /// text (if any) is not the nested model's, so their nested key paths are not columns.
    init(_ schema: ModelSchema, transformed: Set<Int> = []) {
        for (index, field) in schema.fields.enumerated() {
            guard let keyPath = field.keyPath else { continue }
            targets[keyPath as AnyKeyPath] = .field(index)
            // Only a non-optional nested model: `\Post.author?.name` is a key path that cannot
            // be built by appending to `\Post.author`, so an optional one has no entry to find.
            if case .model(let reference) = field.type, !transformed.contains(index) {
                addNested(reference.schema, under: keyPath, field: index, jsonPath: "$", depth: 1)
            }
        }
    }

    private mutating func addNested(_ schema: ModelSchema, under prefix: AnyKeyPath, field: Int, jsonPath: String, depth: Int) {
        guard depth <= Self.maximumNesting else { return }
        for nested in schema.fields {
            guard let inner = nested.keyPath, let keyPath = prefix.appending(path: inner) else { continue }
            // Quoted: a property name may hold any letter, and `"` cannot occur in one.
            let path = jsonPath + ".\"" + nested.name + "\""
            targets[keyPath] = .nested(field: field, jsonPath: path)
            if case .model(let reference) = nested.type {
                addNested(reference.schema, under: keyPath, field: field, jsonPath: path, depth: depth + 1)
            }
        }
    }

    subscript(_ keyPath: AnyKeyPath) -> Target? {
        if let field = seen.field(of: keyPath) { return .field(field) }
        let target = targets[keyPath]
        if case .field(let field)? = target { seen.remember(keyPath, field: field) }
        return target
    }

    /// The schema index of a field's own key path; nil for anything else.
    func field(_ keyPath: AnyKeyPath) -> Int? {
        guard case .field(let index)? = self[keyPath] else { return nil }
        return index
    }
}

/// The fields of the first few key path objects a table was asked about, by identity, readable
/// from any thread without a lock: slots fill in order, each written once (its field before its
/// identity) under a lock that only writers take. The objects are kept, so that an identity is
/// never reused by another key path.
final class KeyPathIdentities: @unchecked Sendable {
    /// Enough for the columns a model's queries name; beyond, lookups hash as before.
    static let capacity = 32

    /// Per slot: the key path's identity (0 while free), then its field.
    private let words: UnsafeMutablePointer<UInt>
    private let writer = NSLock()
    /// Used under `writer`.
    private var kept: [AnyKeyPath] = []

    init() {
        words = .allocate(capacity: 2 * Self.capacity)
        words.initialize(repeating: 0, count: 2 * Self.capacity)
    }

    deinit { words.deallocate() }

    /// The field remembered for `keyPath`, if any.
    func field(of keyPath: AnyKeyPath) -> Int? {
        let identity = UInt(bitPattern: ObjectIdentifier(keyPath))
        for slot in 0..<Self.capacity {
            let stored = modelsync_word_load(words + 2 * slot)
            if stored == 0 { return nil }
            if stored == identity { return Int(modelsync_word_load(words + 2 * slot + 1)) }
        }
        return nil
    }

    /// Remembers `keyPath`'s field, while there is room.
    func remember(_ keyPath: AnyKeyPath, field: Int) {
        writer.lock()
        defer { writer.unlock() }
        guard kept.count < Self.capacity, !kept.contains(where: { $0 === keyPath }) else { return }
        let slot = kept.count
        kept.append(keyPath)
        modelsync_word_store(words + 2 * slot + 1, UInt(field))
        modelsync_word_store(words + 2 * slot, UInt(bitPattern: ObjectIdentifier(keyPath)))
    }
}

extension SQLTable {
    /// The column node of `keyPath`, or a failure naming it when it is not a stored field
    /// (an `@Ignored` property, a computed one, a path into a nested value).
    func columnNode(_ keyPath: AnyKeyPath) -> SQLNode {
        queryColumn(keyPath).node
    }

    /// The column node of `keyPath` and, when its field is stored through its transformer, that
    /// transform: one key-path lookup for both (this runs for every expression of every query).
    @usableFromInline
    func queryColumn(_ keyPath: AnyKeyPath) -> (node: SQLNode, transformed: TransformedColumn?) {
        switch keyPaths[keyPath] {
        case .field(let field)?:
            return (fieldColumns[field], hasTransforms ? transformedColumn(field: field) : nil)
        case .nested(let field, let jsonPath)?:
            // The path is bound, so it never enters the SQL text.
            return (.function("json_extract", [fieldColumns[field], .value(.text(jsonPath))], distinct: false), nil)
        case nil:
            return (.failure(.unknownColumn(table: name, column: "\(keyPath)")), nil)
        }
    }

    /// The column of a field's own key path, for what must name a column (the target of an
    /// assignment): a path into a nested model is an unknown column here.
    func fieldColumnNode(_ keyPath: AnyKeyPath) -> SQLNode {
        guard let field = keyPaths.field(keyPath) else {
            return .failure(.unknownColumn(table: name, column: "\(keyPath)"))
        }
        return fieldColumns[field]
    }
}
