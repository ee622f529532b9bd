/// Why an ``IdentityMap`` could not be saved or loaded.
public struct IdentityMapError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The file exists but could not be read.
        case unreadableFile
        /// The file is not a saved map: truncated, corrupt, or of an unknown version.
        case corruptFile
        /// The file could not be written.
        case unwritableFile
    }

    /// What went wrong.
    public let kind: Kind
    /// The file's path.
    public let path: String
    /// The underlying error, as text.
    public let reason: String

    /// Creates an error.
    public init(_ kind: Kind, path: String, reason: String) {
        self.kind = kind
        self.path = path
        self.reason = reason
    }

    public var description: String {
        let what = switch kind {
        case .unreadableFile: "cannot read the identity map file"
        case .corruptFile: "the identity map file is corrupt"
        case .unwritableFile: "cannot write the identity map file"
        }
        return "\(what) \(path): \(reason)"
    }
}
