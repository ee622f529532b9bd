import ModelSyncCore
import ModelSyncJSON

/// What ``SyncStore`` does when the server's record changed since the local change was made:
/// a `412 Precondition Failed` answer to a conditional write, or a pull that brings a new
/// version of a row with pending local changes.
///
/// A policy sees three versions of the record: the **base** (the server's record when the first
/// pending local change was made), the **local** row (the base with the pending changes), and
/// the **server's** record now. Nil stands for a deleted record.
///
/// ```swift
/// sync.configure(Post.self, conflicts: .merge())                      // the default
/// sync.configure(Post.self, conflicts: .merge { clash in clash.local }) // local wins on clashes
/// sync.configure(Post.self, conflicts: .custom { base, local, server in
///     guard var server, let local else { return server }
///     server.likes = max(server.likes, local.likes)
///     return server
/// })
/// ```
public struct ConflictPolicy<M: SyncedModel>: Sendable {
    let resolve: @Sendable (_ base: JSONValue?, _ local: JSONValue?, _ server: JSONValue?, _ codec: SyncCodec) throws -> JSONValue?

    /// The server's record stays; pending local changes to the row are dropped.
    public static var serverWins: ConflictPolicy {
        ConflictPolicy { _, _, server, _ in server }
    }

    /// The local row replaces the server's record (a local delete deletes it, a local edit of a
    /// record deleted on the server creates it again).
    public static var clientWins: ConflictPolicy {
        ConflictPolicy { _, local, _, _ in local }
    }

    /// A three-way merge per field: a field changed only locally keeps the local value, one
    /// changed only on the server takes the server's, and one changed on both sides to
    /// different values goes to `resolver` (the server's value by default). A delete on one
    /// side against an edit on the other is decided by `resolver` for the record as a whole:
    /// by default the server's side wins.
    public static func merge(_ resolver: @escaping @Sendable (FieldClash) -> JSONValue? = { $0.server }) -> ConflictPolicy {
        ConflictPolicy { base, local, server, _ in
            guard let local, let server else {
                // A delete on one side against an edit on the other: the resolver picks a whole record.
                return resolver(FieldClash(field: "", base: base, local: local, server: server))
            }
            guard case .object(let localFields) = local, case .object(let serverFields) = server else { return server }
            var merged = server
            let baseFields = base?.objectValue ?? JSONObject()
            for name in Set(localFields.keys).union(serverFields.keys) {
                let (b, l, s) = (baseFields[name], localFields[name], serverFields[name])
                guard l != s else { continue }
                if s == b {
                    merged[name] = l
                } else if l != b {
                    merged[name] = resolver(FieldClash(field: name, base: b, local: l, server: s))
                }
            }
            return merged
        }
    }

    /// Any rule: `resolve` gets the base, the local row and the server's record as models (nil
    /// for a deleted one, or a base the entry did not keep) and returns the record to keep, or
    /// nil to delete it.
    public static func custom(_ resolve: @escaping @Sendable (_ base: M?, _ local: M?, _ server: M?) throws -> M?) -> ConflictPolicy {
        ConflictPolicy { base, local, server, codec in
            try resolve(codec.decode(M.self, base), codec.decode(M.self, local), codec.decode(M.self, server)).map(codec.encode)
        }
    }
}

/// One field changed on both sides, handed to a ``ConflictPolicy/merge(_:)`` resolver. For a
/// delete against an edit, `field` is empty and the values are the whole records.
public struct FieldClash: Sendable, Hashable {
    /// The field's JSON key.
    public var field: String
    /// Its value when the first pending local change was made (nil when unknown or absent).
    public var base: JSONValue?
    /// Its local value (nil: absent, or the record deleted locally).
    public var local: JSONValue?
    /// The server's value (nil: absent, or the record deleted on the server).
    public var server: JSONValue?
}

/// The coders a policy uses for models: the remote store's.
struct SyncCodec: Sendable {
    let encoder: JSONModelEncoder
    let decoder: JSONModelDecoder

    func decode<M: SyncedModel>(_ type: M.Type, _ value: JSONValue?) throws -> M? {
        try value.map { try decoder.decode(M.self, from: $0.jsonBytes()) }
    }

    func encode<M: SyncedModel>(_ model: M) throws -> JSONValue {
        try encoder.encodeToValue(model)
    }
}

/// Where a row's server version comes from; see
/// ``SyncStore/configure(_:conflicts:version:pagination:)``.
public enum VersionSource: Sendable, Hashable {
    /// The `ETag` of the server's responses (and the sequence of a change feed, whose ETags are
    /// `"<sequence>"`).
    case etag
    /// A field of the record, such as `version` or `updated_at` (its JSON key), sent back as
    /// `If-Match: "<value>"`.
    case field(String)
}

/// A conflict ``SyncStore`` met and resolved, as reported by ``SyncStatus/conflicts``.
public struct SyncConflict: Sendable, Hashable {
    /// The model's schema name.
    public var model: String
    /// The row's primary key.
    public var key: JSONValue
    /// The record when the first pending local change was made.
    public var base: JSONValue?
    /// The local row (nil: deleted locally).
    public var local: JSONValue?
    /// The server's record (nil: deleted on the server).
    public var server: JSONValue?
    /// What the policy kept (nil: the record is deleted).
    public var resolved: JSONValue?
}
