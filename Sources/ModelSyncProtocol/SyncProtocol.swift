import ModelSyncJSON

/// The sync protocol between `SyncStore` and a server, as one typed definition that both sides
/// use: the change feed, batches, errors and the headers. `docs/PROTOCOL.md` describes it for
/// anyone who implements a server.
public enum SyncProtocol {
    /// The version this package speaks.
    public static let version = 1
    /// The versions a server built from this package answers.
    public static let supportedVersions: Set<Int> = [1]

    /// The header a client names its protocol version in, and a server its own.
    public static let versionHeader = "ModelSync-Protocol"
    /// The header of a write's idempotency key: a repeat gets the first answer.
    public static let idempotencyKeyHeader = "Idempotency-Key"
    /// The header marking an answer as the replay of a write applied before (`true`).
    public static let replayedHeader = "Idempotent-Replayed"
    /// The longest idempotency key a server must take, in UTF-8 bytes.
    public static let maximumIdempotencyKeyLength = 255

    /// The strong `ETag` of a record's version: `"17"`.
    public static func etag(ofVersion version: Int) -> String {
        // Concatenated, not interpolated: built for every row a pull or a feed page carries.
        "\"" + String(version) + "\""
    }

    /// The version a request names, or nil when it names none (a client that predates the
    /// header, or a plain REST client: version 1 is assumed).
    ///
    /// A version is its decimal digits as ``version`` prints them, with optional white space
    /// around (HTTP's); a sign, leading zeros or inner spaces are not a version.
    ///
    /// - Throws: ``SyncProtocolError/unsupportedVersion(_:supported:)`` when it names one this
    ///   package does not speak, or text that is not a version.
    public static func negotiate(_ header: String?) throws(SyncProtocolError) -> Int? {
        guard let header else { return nil }
        let trimmed = header.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        guard let version = supportedVersions.first(where: { String($0).elementsEqual(trimmed) }) else {
            throw .unsupportedVersion(header, supported: supportedVersions.sorted())
        }
        return version
    }
}

/// A message that does not follow the protocol.
public enum SyncProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A member is missing or has the wrong type; `path` names it (`changes[3].seq`).
    case invalid(message: String, path: String)
    /// The peer named a protocol version this package does not speak.
    case unsupportedVersion(String, supported: [Int])

    public var description: String {
        switch self {
        case .invalid(let message, let path): "\(path): \(message)"
        case .unsupportedVersion(let given, let supported):
            "protocol version \(given) is not spoken here; supported: \(supported.map(String.init).joined(separator: ", "))"
        }
    }
}

/// Reading members of a message with typed errors that name where the message is wrong.
struct MessageReader {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String) throws(SyncProtocolError) {
        guard case .object = value else { throw .invalid(message: "expected an object", path: path) }
        self.value = value
        self.path = path
    }

    func member(_ name: String) -> JSONValue? {
        guard let member = value[name], member != .null else { return nil }
        return member
    }

    func required(_ name: String) throws(SyncProtocolError) -> JSONValue {
        guard let member = member(name) else { throw .invalid(message: "missing", path: path + "." + name) }
        return member
    }

    func string(_ name: String) throws(SyncProtocolError) -> String {
        guard let text = try required(name).stringValue else { throw .invalid(message: "expected a string", path: path + "." + name) }
        return text
    }

    func optionalString(_ name: String) throws(SyncProtocolError) -> String? {
        guard let member = member(name) else { return nil }
        guard let text = member.stringValue else { throw .invalid(message: "expected a string", path: path + "." + name) }
        return text
    }

    func integer(_ name: String) throws(SyncProtocolError) -> Int {
        guard let number = try required(name).intValue else { throw .invalid(message: "expected an integer", path: path + "." + name) }
        return number
    }

    func bool(_ name: String, default fallback: Bool) throws(SyncProtocolError) -> Bool {
        guard let member = member(name) else { return fallback }
        guard case .bool(let flag) = member else { throw .invalid(message: "expected true or false", path: path + "." + name) }
        return flag
    }

    func array(_ name: String) throws(SyncProtocolError) -> [JSONValue] {
        guard let elements = try required(name).arrayValue else { throw .invalid(message: "expected an array", path: path + "." + name) }
        return elements
    }
}

extension SyncProtocol {
    /// The paths of the protocol's routes and of the built-in accounts', relative to the
    /// server's base URL: what a client appends to it, and what a server registers (after a `/`).
    public enum Path {
        /// `POST`: several writes in one request (``SyncBatchRequest``).
        public static let batch = "_batch"
        /// `GET`: the change feed of every collection (``SyncFeedPage``).
        public static let changes = "_changes"
        /// `GET`: the change stream, Server-Sent Events, one ``SyncChange`` each.
        public static let changeStream = "_changes/stream"
        /// `POST`: creates an account and signs it in (json-server-auth's route).
        public static let register = "register"
        /// `POST`: json-server-auth's other name for ``register``.
        public static let signup = "signup"
        /// `POST`: signs in with an email and a password (json-server-auth's route).
        public static let login = "login"
        /// `POST`: json-server-auth's other name for ``login``.
        public static let signin = "signin"
        /// `POST`: a refresh token for a new access token and a new refresh token.
        public static let token = "token"
        /// `POST`: revokes a refresh token.
        public static let logout = "logout"
        /// The accounts' own routes: `_accounts/<id>/role`, `/password`, `/logout`.
        public static let accounts = "_accounts"
    }
}
