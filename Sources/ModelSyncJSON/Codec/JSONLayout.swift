import ModelSyncCore

/// How a model's fields meet JSON: the key of every field, ready for matching against the
/// bytes of a document and for writing, and the model's own date strategy.
///
/// `@Model` creates one per type (`static let jsonLayout`); decoding and encoding never compute
/// keys again.
public final class JSONLayout: @unchecked Sendable {
    // @unchecked: every stored property is immutable after init; `keyBytes` is owned and freed
    // by this object and only read.
    //
    // Key bytes sit in one buffer addressed by ranges, so that matching and writing a key costs
    // no retain or release of a per-key array.

    /// The schema the layout was built from.
    public let schema: ModelSchema
    /// The model's own date strategy, if it sets one.
    public let dateStrategy: JSONDateStrategy?

    /// Distinct first components of the fields' keys ("heads"): a document object is matched
    /// against these, one slot per head.
    let headCount: Int
    private let keyBytes: UnsafeMutableBufferPointer<UInt8>
    /// The UTF-8 bytes of each head, in `keyBytes`.
    private let headRanges: [Range<Int>]
    /// The bytes `"key":` of each field, for writing plain keys, in `keyBytes`.
    private let encodedKeyRanges: [Range<Int>]
    /// Per field: its head's index, the rest of a dotted key (empty for plain keys), and the full
    /// key as path components (for errors).
    let fieldHead: [Int]
    let fieldRest: [[JSONPath.Component]]
    let fieldKeyPath: [[JSONPath.Component]]
    /// Whether any key is dotted (most models have none, and skip that check per field).
    let hasNestedKeys: Bool
    /// The indices of the primary-key fields, for identity-map decoding.
    let primaryKeyFields: [Int]

    /// The layout of the storage format: property names as keys, none dotted, no date strategy
    /// (see ``JSONCodingProfile/storage``). Nil in a storage layout itself.
    private let storage: JSONLayout?

    /// The layout that storage-format runs use.
    var storageLayout: JSONLayout { storage ?? self }

    /// Builds the layout of `schema`, with the model's date strategy if it has one.
    public convenience init(schema: ModelSchema, dates: JSONDateStrategy? = nil) {
        self.init(schema: schema, dates: dates, storage: JSONLayout(schema: schema, dates: nil, storage: nil))
    }

    /// A wire layout with its storage layout, or (`storage` nil) a storage layout.
    private init(schema: ModelSchema, dates: JSONDateStrategy?, storage: JSONLayout?) {
        self.schema = schema
        self.dateStrategy = dates
        self.storage = storage
        let isStorage = storage == nil

        var heads: [String] = []
        var fieldHead: [Int] = []
        var fieldRest: [[JSONPath.Component]] = []
        var fieldKeyPath: [[JSONPath.Component]] = []
        var encodedKeys: [[UInt8]] = []
        for field in schema.fields {
            // Only explicit keys reach into nested objects; a strategy never invents dots.
            let key = isStorage ? field.name : field.jsonKey
            let parts = !isStorage && field.hasExplicitJSONKey && field.jsonKey.contains(".")
                ? field.jsonKey.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                : [key]
            let head = parts[0]
            // By bytes: keys that Swift calls equal but spell differently are different members.
            if let index = heads.firstIndex(where: { UTF8Key.sameBytes($0, head) }) {
                fieldHead.append(index)
            } else {
                fieldHead.append(heads.count)
                heads.append(head)
            }
            fieldRest.append(parts.dropFirst().map { .key($0) })
            fieldKeyPath.append(parts.map { .key($0) })
            encodedKeys.append(JSONWriter.escapedKey(key))
        }
        self.fieldHead = fieldHead
        self.fieldRest = fieldRest
        self.fieldKeyPath = fieldKeyPath
        self.hasNestedKeys = fieldRest.contains { !$0.isEmpty }
        self.primaryKeyFields = schema.fields.indices.filter { schema.fields[$0].isPrimaryKey }
        self.headCount = heads.count

        let chunks = heads.map { Array($0.utf8) } + encodedKeys
        keyBytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(chunks.reduce(0) { $0 + $1.count }, 1))
        var ranges: [Range<Int>] = []
        var offset = 0
        for chunk in chunks {
            _ = UnsafeMutableBufferPointer(rebasing: keyBytes[offset..<offset + chunk.count]).initialize(from: chunk)
            ranges.append(offset..<offset + chunk.count)
            offset += chunk.count
        }
        headRanges = Array(ranges[..<heads.count])
        encodedKeyRanges = Array(ranges[heads.count...])
    }

    deinit {
        keyBytes.deallocate()
    }

    /// The same layout with keys from `strategy` (fields with explicit keys keep theirs).
    func rekeyed(with strategy: KeyStrategy) -> JSONLayout {
        JSONLayout(schema: ModelSchema(name: schema.name, fields: schema.fields, jsonKeys: strategy), dates: dateStrategy)
    }

    /// How many slots an object decoder needs (at least one, for models without fields).
    @usableFromInline
    var slotCount: Int { max(headCount, 1) }

    /// Whether a field's key is dotted, so that encoding must build nested objects.
    func isNested(_ field: Int) -> Bool { !fieldRest[field].isEmpty }

    /// Points each head's slot at the value node of its member in `object` (or -1).
    ///
    /// Members are tried against the head after the last match first: documents written by one
    /// server keep one key order, so matching is one comparison per member in the usual case.
    func fillSlots(_ slots: UnsafeMutableBufferPointer<Int32>, object: Int, tape: JSONTape) {
        for index in 0..<headCount { slots[index] = -1 }
        let memberCount = Int(tape.nodes[object].length)
        var key = object + 1
        var hint = 0
        for _ in 0..<memberCount {
            let head = headIndex(ofKey: key, tape: tape, hint: hint)
            if head >= 0 {
                slots[head] = Int32(key + 1)
                hint = head + 1
            }
            key = Int(tape.nodes[key + 1].end)
        }
    }

    private func headIndex(ofKey key: Int, tape: JSONTape, hint: Int) -> Int {
        if hint < headCount, matches(key, head: hint, tape: tape) { return hint }
        for head in 0..<headCount where head != hint && matches(key, head: head, tape: tape) {
            return head
        }
        return -1
    }

    /// The bytes `"key":` that start field `field`'s member (plain keys).
    @inline(__always)
    func encodedKey(_ field: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: keyBytes[encodedKeyRanges[field]])
    }

    @inline(__always)
    private func matches(_ key: Int, head: Int, tape: JSONTape) -> Bool {
        tape.keyEquals(key, UnsafeBufferPointer(rebasing: keyBytes[headRanges[head]]))
    }
}
