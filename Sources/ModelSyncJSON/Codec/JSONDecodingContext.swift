import ModelSyncCore

/// The state of one decoding run: the parsed document, the options, the date strategy in force
/// and the report being collected. Custom ``JSONDecodable`` types receive it `inout`.
public struct JSONDecodingContext {
    /// The document, or the current element's tape when a root array is read element by
    /// element (see `JSONElementReader`).
    var tape: JSONTape
    /// The options of this run.
    public let options: JSONDecodingOptions
    /// The date strategy in force: the model's own, or else the options'.
    var dateStrategy: JSONDateStrategy
    /// Report entries, located by node until the run ends (paths are resolved only then).
    var entries: [(node: Int, suffix: [JSONPath.Component], kind: DecodeReport.Kind)] = []
    /// Entries of elements already read off a root array, resolved before their tape was reused.
    var settledEntries: [DecodeReport.Entry] = []
    /// Layouts rebuilt for ``JSONDecodingOptions/keyStrategy``.
    var layouts: LayoutCache
    /// The options' identity map, at hand for the per-object check.
    @usableFromInline let identityMap: IdentityMap?
    /// While merging a payload into a canonical value: that value, whose fields stand in for
    /// keys the payload lacks (looked up on first use, see `mergeBaseValue()`).
    var mergeBase: MergeBase?

    init(tape: JSONTape, options: JSONDecodingOptions) {
        self.tape = tape
        self.options = options
        self.identityMap = options.identityMap
        self.dateStrategy = options.dateStrategy
        self.layouts = LayoutCache(strategy: options.keyStrategy, profile: options.profile)
    }

    /// Makes `base` the value that missing keys are taken from and returns the previous one.
    mutating func exchangeMergeBase(_ base: MergeBase?) -> MergeBase? {
        defer { mergeBase = base }
        return mergeBase
    }

    /// Whether the run reads the storage format.
    @usableFromInline var isStorage: Bool { layouts.isStorage }

    /// Whether the run is lenient.
    public var isLenient: Bool { options.mode == .lenient }

    /// The subtree at `node` as a ``JSONValue``.
    public func value(_ node: Int) throws -> JSONValue {
        try JSONValue(tape: tape, node: node)
    }

    /// A string node's text; other kinds throw a type mismatch (numbers and booleans are
    /// accepted as their text in lenient mode).
    public mutating func string(_ node: Int) throws -> String {
        try String.decodeJSON(node, &self)
    }

    /// Records a lenient step at `node` (and optionally a key below it).
    public mutating func record(_ kind: DecodeReport.Kind, at node: Int, key: String? = nil) {
        entries.append((node, key.map { [.key($0)] } ?? [], kind))
    }

    /// An error located at `node`; its path is filled in when it leaves the decoder.
    public func error(_ reason: JSONError.Reason, at node: Int) -> JSONError {
        var error = JSONError(reason)
        error.node = node
        return error
    }

    /// A type-mismatch error at `node` that describes what was found there.
    public func mismatch(_ node: Int, expected: String) -> JSONError {
        error(.typeMismatch(expected: expected, found: tape.describe(node)), at: node)
    }

    /// The layout to use for `M`: its own, or one rebuilt for the key-strategy option.
    @usableFromInline
    mutating func layout<M: JSONModel>(for type: M.Type) -> JSONLayout {
        layouts.layout(for: type)
    }

    /// Whether `node` is an object.
    ///
    /// `mutating` though it only reads: models call it through a pointer to the context, and a
    /// non-mutating call there copies the whole context (a retain and release of each of its
    /// references, for every object decoded) to pass it by value.
    @usableFromInline
    mutating func isObject(_ node: Int) -> Bool {
        tape.nodes[node].kind == .object
    }

    /// Starts decoding a model with `layout`: its own date strategy, if it has one, is in force
    /// until ``leave(restoring:)`` is given what this returns.
    @usableFromInline
    mutating func enter(_ layout: JSONLayout) -> JSONDateStrategy? {
        guard let dates = layout.dateStrategy else { return nil }
        defer { dateStrategy = dates }
        return dateStrategy
    }

    @usableFromInline
    mutating func leave(restoring outer: JSONDateStrategy?) {
        if let outer { dateStrategy = outer }
    }

    /// The collected entries with their paths.
    func resolvedReport() -> DecodeReport {
        DecodeReport(entries: settledEntries + entries.map { entry in
            DecodeReport.Entry(path: JSONPath(tape.path(to: entry.node) + entry.suffix), kind: entry.kind)
        })
    }

    /// Resolves the entries collected on the current tape, an element of a root array, under
    /// `prefix` (the element's index), before that tape is reused.
    mutating func settleEntries(under prefix: JSONPath.Component) {
        guard !entries.isEmpty else { return }
        for entry in entries {
            settledEntries.append(DecodeReport.Entry(path: JSONPath([prefix] + tape.path(to: entry.node) + entry.suffix), kind: entry.kind))
        }
        entries.removeAll(keepingCapacity: true)
    }

    /// Forgets the entries collected so far, settled or not.
    mutating func discardReport() {
        entries.removeAll(keepingCapacity: true)
        settledEntries.removeAll(keepingCapacity: true)
    }

    /// Sets a thrown error's path (from its node) and clears the node: call where an error
    /// leaves this document.
    func locate(_ error: inout JSONError) {
        guard let node = error.node else { return }
        error.path = JSONPath(tape.path(to: node) + error.path.components)
        error.node = nil
    }

    /// Runs `body` on a second document (built by a hook) as if it stood at `node` of this one:
    /// report entries and errors from it are located below `node`.
    mutating func decodeDetached<T>(
        _ document: JSONDocument,
        at node: Int,
        _ body: (inout JSONDecodingContext) throws -> T
    ) throws -> T {
        try document.withTape { subTape in
            var sub = JSONDecodingContext(tape: subTape, options: options)
            sub.dateStrategy = dateStrategy
            sub.layouts = layouts
            do {
                let value = try body(&sub)
                for entry in sub.resolvedReport().entries {
                    entries.append((node, entry.path.components, entry.kind))
                }
                return value
            } catch var error as JSONError {
                sub.locate(&error)
                error.node = node
                throw error
            }
        }
    }
}

extension JSONTape {
    /// The path from the root to `target`, found by walking down the tape (errors and report
    /// entries only, so the decoding fast path never tracks paths).
    func path(to target: Int) -> [JSONPath.Component] {
        var components: [JSONPath.Component] = []
        var current = 0
        while current != target, current < nodes.count {
            let node = nodes[current]
            guard node.kind == .array || node.kind == .object else { break }
            var child = current + 1
            var found = false
            for index in 0..<Int(node.length) {
                let valueNode = node.kind == .object ? child + 1 : child
                let end = Int(nodes[valueNode].end)
                if target == child && node.kind == .object {
                    // The target is a key node: point at its member.
                    components.append(.key((try? string(child)) ?? "?"))
                    return components
                }
                if target >= valueNode && target < end {
                    components.append(node.kind == .object ? .key((try? string(child)) ?? "?") : .index(index))
                    current = valueNode
                    found = true
                    break
                }
                child = end
            }
            if !found { break }
        }
        return components
    }

    /// The node at `path` below `node`, or nil when a step is missing.
    func locate(_ path: [JSONPath.Component], from node: Int) -> Int? {
        var current = node
        for component in path {
            let container = nodes[current]
            switch component {
            case .key(let key):
                guard container.kind == .object else { return nil }
                guard let found = member(of: current, named: key) else { return nil }
                current = found
            case .index(let index):
                guard container.kind == .array, index >= 0, index < Int(container.length) else { return nil }
                var child = current + 1
                for _ in 0..<index { child = Int(nodes[child].end) }
                current = child
            }
        }
        return current
    }

    /// The value node of the member `key` of the object at `object`, or nil. The last of
    /// duplicate keys wins, as in the model decoding path.
    func member(of object: Int, named key: String) -> Int? {
        var key = key
        return key.withUTF8 { keyBytes in
            var child = object + 1
            var found: Int?
            for _ in 0..<Int(nodes[object].length) {
                if keyEquals(child, keyBytes) { found = child + 1 }
                child = Int(nodes[child + 1].end)
            }
            return found
        }
    }
}
