import ModelSyncJSON

/// One entry of the change feed: a record as it is now, or its deletion.
///
/// `{"seq": 17, "collection": "posts", "id": 3, "deleted": false, "record": {…}, "createdWith": "…"}`
public struct SyncChange: Sendable, Hashable {
    /// The sequence value of the change: the record's version (its `ETag` is `"<seq>"`).
    public var sequence: Int
    /// The collection the record belongs to.
    public var collection: String
    /// The record's id.
    public var id: JSONValue
    /// The record now; nil for a deletion.
    public var record: JSONValue?
    /// The `Idempotency-Key` of the create that made the record, when it had one: a client whose
    /// create's answer was lost recognises its record by it.
    public var createdWith: String?
    /// In a filtered feed (`GET /cards?_since=…&boardId=5`), a record that changed and no longer
    /// matches the filter: sent as a deletion with `"left": true`. The record still exists; it
    /// only left what this filter holds.
    public var leftFilter: Bool

    /// The record's `ETag` after the change.
    public var etag: String { SyncProtocol.etag(ofVersion: sequence) }

    /// Whether the change is a deletion (a tombstone), or a record leaving a filtered feed.
    public var isDeletion: Bool { record == nil }

    /// Creates a change.
    public init(sequence: Int, collection: String, id: JSONValue, record: JSONValue?, createdWith: String? = nil, leftFilter: Bool = false) {
        self.sequence = sequence
        self.collection = collection
        self.id = id
        self.record = leftFilter ? nil : record
        self.createdWith = createdWith
        self.leftFilter = leftFilter
    }

    /// Reads a change; `path` names it in errors.
    public init(json: JSONValue, path: String = "change") throws(SyncProtocolError) {
        let reader = try MessageReader(json, path: path)
        let deleted = try reader.bool("deleted", default: false)
        let left = try reader.bool("left", default: false)
        self.init(
            sequence: try reader.integer("seq"), collection: try reader.string("collection"), id: try reader.required("id"),
            // `JSONValue?.none`, not `nil`: JSONValue takes a nil literal as `.null`.
            record: deleted ? JSONValue?.none : try reader.required("record"), createdWith: try reader.optionalString("createdWith"),
            leftFilter: deleted && left)
    }

    /// The change as the feed sends it.
    public var json: JSONValue {
        var object = JSONObject()
        object["seq"] = .number(JSONNumber(sequence))
        object["collection"] = .string(collection)
        object["id"] = id
        object["deleted"] = .bool(record == nil)
        if let record { object["record"] = record }
        if let createdWith { object["createdWith"] = .string(createdWith) }
        if leftFilter { object["left"] = .bool(true) }
        return .object(object)
    }
}

/// A page of the change feed: `GET /<collection>?_since=<cursor>` or
/// `GET /_changes?since=<cursor>`.
///
/// `{"changes": [...], "next": "<cursor>", "more": false}`
public struct SyncFeedPage: Sendable, Hashable {
    /// The changes after the cursor asked with, oldest first: each record at most once.
    public var changes: [SyncChange]
    /// The cursor to ask with next (opaque to clients).
    public var next: String
    /// Whether more changes follow `next` now.
    public var more: Bool

    /// Creates a page.
    public init(changes: [SyncChange], next: String, more: Bool) {
        self.changes = changes
        self.next = next
        self.more = more
    }

    /// Reads a page.
    ///
    /// - Throws: ``SyncProtocolError/invalid(message:path:)``, naming the member at fault.
    public init(json: JSONValue) throws(SyncProtocolError) {
        let reader = try MessageReader(json, path: "page")
        var changes: [SyncChange] = []
        for (index, change) in try reader.array("changes").enumerated() {
            changes.append(try SyncChange(json: change, path: "page.changes[\(index)]"))
        }
        self.init(changes: changes, next: try reader.string("next"), more: try reader.bool("more", default: false))
    }

    /// Whether `json` is a feed page at all: a server that ignores `_since` answers a plain list
    /// or another envelope, and has no feed.
    public static func isFeedPage(_ json: JSONValue) -> Bool {
        json["changes"]?.arrayValue != nil && json["next"]?.stringValue != nil
    }

    /// The page as the server sends it.
    public var json: JSONValue {
        ["changes": .array(changes.map(\.json)), "next": .string(next), "more": .bool(more)]
    }
}

/// A page of the change feed read in place from its parsed answer, for a client that applies
/// it: each change's members as ``SyncFeedPage`` reads them (the same checks and errors), but
/// its record left where it is in the document, to be decoded from the bytes. Building the
/// page as values (every record an object of values, then thrown away) cost a pull more than
/// decoding the records.
package struct SyncFeedDocument: Sendable {
    /// One change of the page.
    package struct Change: Sendable {
        /// The sequence value of the change: the record's version.
        package var sequence: Int
        /// The record's id.
        package var id: JSONValue
        /// The record in the document; nil for a deletion.
        package var record: JSONDocument.Node?
        /// The `Idempotency-Key` of the create that made the record, when it had one.
        package var createdWith: String?
        /// A record that left the feed's filter (``SyncChange/leftFilter``), not a deletion.
        package var leftFilter = false

        /// The record's `ETag` after the change.
        package var etag: String { SyncProtocol.etag(ofVersion: sequence) }

        /// Whether the change is a deletion (a tombstone).
        package var isDeletion: Bool { record == nil }
    }

    /// The parsed answer the changes point into.
    package let document: JSONDocument
    /// The changes, oldest first.
    package let changes: [Change]
    /// The cursor to ask with next.
    package let next: String
    /// Whether more changes follow `next` now.
    package let more: Bool

    /// Reads the page in `document`; nil when it is no feed page at all (see
    /// ``SyncFeedPage/isFeedPage(_:)``: a server that ignores `_since`).
    ///
    /// - Throws: ``SyncProtocolError/invalid(message:path:)``, naming the member at fault.
    package init?(document: JSONDocument) throws(SyncProtocolError) {
        let root = JSONDocument.Node.root
        guard let elements = document.elements(ofArrayAt: JSONPath([.key("changes")])),
              case .string(let next)? = try Self.member("next", of: root, in: document, path: "page.next") else {
            return nil
        }
        var changes: [Change] = []
        changes.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            changes.append(try Self.change(element, in: document, index: index))
        }
        let more: Bool
        switch try Self.member("more", of: root, in: document, path: "page.more") {
        case nil: more = false
        case .bool(let flag)?: more = flag
        case .some: throw .invalid(message: "expected true or false", path: "page.more")
        }
        self.document = document
        self.changes = changes
        self.next = next
        self.more = more
    }

    /// The members of a change, found together: see ``change(_:in:index:)``.
    private static let changeMembers = JSONMemberNames(["deleted", "seq", "collection", "id", "record", "createdWith", "left"])

    /// Change `index`, read as ``SyncChange/init(json:path:)`` reads it; the error's path is
    /// built only for an error.
    private static func change(_ node: JSONDocument.Node, in document: JSONDocument, index: Int) throws(SyncProtocolError) -> Change {
        func path(_ member: String? = nil) -> String { "page.changes[\(index)]" + (member.map { "." + $0 } ?? "") }
        guard let members = document.members(changeMembers, of: node) else { throw .invalid(message: "expected an object", path: path()) }
        let deleted: Bool
        switch try value(members[0], in: document, path: path("deleted")) {
        case nil: deleted = false
        case .bool(let flag)?: deleted = flag
        case .some: throw .invalid(message: "expected true or false", path: path("deleted"))
        }
        guard let seqValue = try value(members[1], in: document, path: path("seq")) else { throw .invalid(message: "missing", path: path("seq")) }
        guard let sequence = seqValue.intValue else { throw .invalid(message: "expected an integer", path: path("seq")) }
        guard let collection = try value(members[2], in: document, path: path("collection")) else {
            throw .invalid(message: "missing", path: path("collection"))
        }
        guard case .string = collection else { throw .invalid(message: "expected a string", path: path("collection")) }
        guard let id = try value(members[3], in: document, path: path("id")) else { throw .invalid(message: "missing", path: path("id")) }
        var record: JSONDocument.Node?
        if !deleted {
            // Only looked at, not read: the caller decodes it from the bytes.
            guard let found = members[4], !document.isNull(found) else { throw .invalid(message: "missing", path: path("record")) }
            record = found
        }
        var createdWith: String?
        if let value = try value(members[5], in: document, path: path("createdWith")) {
            guard case .string(let text) = value else { throw .invalid(message: "expected a string", path: path("createdWith")) }
            createdWith = text
        }
        var leftFilter = false
        switch try value(members[6], in: document, path: path("left")) {
        case nil: break
        case .bool(let flag)?: leftFilter = deleted && flag
        case .some: throw .invalid(message: "expected true or false", path: path("left"))
        }
        return Change(sequence: sequence, id: id, record: record, createdWith: createdWith, leftFilter: leftFilter)
    }

    /// The value at `node`; nil when there is none or it is `null` (as ``SyncFeedPage`` reads
    /// members). Only small members are read so: never a record.
    private static func value(_ node: JSONDocument.Node?, in document: JSONDocument, path: @autoclosure () -> String) throws(SyncProtocolError) -> JSONValue? {
        guard let node else { return nil }
        let value: JSONValue?
        do {
            value = try document.value(at: node)
        } catch {
            throw .invalid(message: "\(error)", path: path())
        }
        if case .null? = value { return nil }
        return value
    }

    /// Member `name` of the object at `node` as a value; nil when it is missing or `null` (as
    /// ``SyncFeedPage`` reads members). Only small members are read so: never a record.
    private static func member(
        _ name: String, of node: JSONDocument.Node, in document: JSONDocument, path: @autoclosure () -> String
    ) throws(SyncProtocolError) -> JSONValue? {
        try value(document.member(name, of: node), in: document, path: path())
    }
}

/// The body of a `410 Gone` answer to a cursor older than the deletions the server keeps, or
/// past its last change (its data went back): read everything again, then follow the feed from
/// `horizon`.
///
/// `{"error": "…", "horizon": "<cursor>"}`
public struct SyncFeedGone: Sendable, Hashable {
    /// The cursor to follow the feed from after reading everything.
    public var horizon: String

    /// Creates the body.
    public init(horizon: String) { self.horizon = horizon }

    /// Reads the body of a 410.
    public init(json: JSONValue) throws(SyncProtocolError) {
        horizon = try MessageReader(json, path: "gone").string("horizon")
    }
}

/// The body of an error answer: `{"error": "<message>", …}`, with `current` (a 412's record as it
/// is now; its `ETag` is the answer's) and `horizon` (a 410's) where they apply.
public struct SyncErrorBody: Sendable, Hashable {
    /// What went wrong, for people.
    public var error: String
    /// A 412's current record.
    public var current: JSONValue?
    /// A 410's horizon.
    public var horizon: String?
    /// Other members the server adds.
    public var details: JSONObject

    /// Creates a body.
    public init(error: String, current: JSONValue? = nil, horizon: String? = nil, details: JSONObject = JSONObject()) {
        self.error = error
        self.current = current
        self.horizon = horizon
        self.details = details
    }

    /// Reads an error body; a body that is not one gives nil.
    public init?(json: JSONValue) {
        guard let error = json["error"]?.stringValue else { return nil }
        var details = json.objectValue ?? JSONObject()
        for name in ["error", "current", "horizon"] { details.removeValue(forKey: name) }
        let current = json["current"].flatMap { $0 == .null ? JSONValue?.none : $0 }
        self.init(error: error, current: current, horizon: json["horizon"]?.stringValue, details: details)
    }

    /// The body as a server sends it.
    public var json: JSONValue {
        var object: JSONObject = ["error": .string(error)]
        for (name, value) in details { object[name] = value }
        if let current { object["current"] = current }
        if let horizon { object["horizon"] = .string(horizon) }
        return .object(object)
    }
}
