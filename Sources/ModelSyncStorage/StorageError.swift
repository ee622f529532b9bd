/// Every failure of key-value storage, naming the suite and (when there is one) the key.
///
/// Nothing in the storage layer traps on bad input or bad files: a rejected name, a corrupt or
/// truncated file, a value of another type, or a failing system call is always one of these.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why a key or suite name was rejected.
    public enum NameProblem: Sendable, Equatable {
        /// The name is empty.
        case empty
        /// The name contains `/`, which could reach another directory.
        case containsSlash
        /// The name contains a NUL character, which ends a path in the system calls.
        case containsNUL
        /// The name is `.` or `..`.
        case dotName
        /// The name's file name (see ``StorageSuite``) would be `length` bytes, more than `limit`.
        case tooLong(length: Int, limit: Int)
    }

    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The suite name was rejected.
        case invalidSuiteName(NameProblem)
        /// The key was rejected.
        case invalidKey(NameProblem)
        /// The stored file is not JSON (damaged or truncated); it was left as it is.
        case corrupt
        /// The stored JSON does not decode as the requested type; it was left as it is.
        case typeMismatch
        /// A default key cannot be made: the model has no primary key, its key is nil, or the
        /// number of id values given does not match the key's columns.
        case missingPrimaryKey
        /// The value could not be encoded (e.g. a non-finite number); nothing was written.
        case encodingFailed
        /// A system call failed with `errno` (see ``StorageError/message`` for the call).
        case fileSystem(errno: Int32)
        /// Two model types with the same name in different namespaces (`A.User`, `B.User`)
        /// would share default keys (`User.1`) in this suite; `types` are their full names.
        /// Nothing was read or written: pass explicit keys for one of them.
        case defaultKeyClash(name: String, types: [String])
    }

    /// What went wrong.
    public var kind: Kind
    /// The suite's name.
    public var suite: String
    /// The key, when the failure concerns one.
    public var key: String?
    /// A sentence saying what failed and why.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, suite: String, key: String? = nil, message: String) {
        self.kind = kind
        self.suite = suite
        self.key = key
        self.message = message
    }

    /// `storage suite 'settings', key 'theme': ` and the message.
    public var description: String {
        let place = key.map { "storage suite '\(suite)', key '\($0)'" } ?? "storage suite '\(suite)'"
        return "\(place): \(message)"
    }
}

extension StorageError.NameProblem: CustomStringConvertible {
    /// The problem as the end of a sentence: `contains '/'`.
    public var description: String {
        switch self {
        case .empty: "is empty"
        case .containsSlash: "contains '/'"
        case .containsNUL: "contains a NUL character"
        case .dotName: "is '.' or '..'"
        case .tooLong(let length, let limit): "is too long: \(length) bytes as a file name, at most \(limit)"
        }
    }
}
