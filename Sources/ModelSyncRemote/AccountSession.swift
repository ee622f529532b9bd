import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON

/// The tokens of a signed-in account, as ``SessionTokenStorage`` keeps them.
public struct SessionTokens: Sendable, Equatable, Codable {
    /// The bearer token requests carry.
    public var accessToken: String
    /// The token that gets the next access token (`POST /token`); nil from a server without
    /// refresh tokens.
    public var refreshToken: String?
    /// When the access token expires (from the server's `expiresIn`, or the token's own `exp`);
    /// nil when unknown.
    public var expiresAt: Date?
    /// The account's user id (its record's `id`, as text), when known.
    public var userID: String?

    /// Creates a set of tokens.
    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil, userID: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.userID = userID
    }
}

/// Where an ``AccountSession`` keeps its tokens between launches: the Keychain in an app,
/// ``InMemorySessionTokenStorage`` in tests.
///
/// ```swift
/// struct KeychainTokens: SessionTokenStorage {
///     func loadTokens() async throws -> SessionTokens? { … }   // SecItemCopyMatching, JSONDecoder
///     func saveTokens(_ tokens: SessionTokens) async throws { … } // SecItemAdd / SecItemUpdate
///     func removeTokens() async throws { … }                     // SecItemDelete
/// }
/// ```
public protocol SessionTokenStorage: Sendable {
    /// The tokens kept, nil when there are none.
    func loadTokens() async throws -> SessionTokens?
    /// Keeps `tokens` in place of any kept before.
    func saveTokens(_ tokens: SessionTokens) async throws
    /// Forgets the tokens.
    func removeTokens() async throws
}

/// Tokens kept in memory only: a signed-in account is forgotten when the process ends.
public actor InMemorySessionTokenStorage: SessionTokenStorage {
    private var tokens: SessionTokens?

    /// Creates a storage holding `tokens`.
    public init(_ tokens: SessionTokens? = nil) { self.tokens = tokens }

    public func loadTokens() -> SessionTokens? { tokens }
    public func saveTokens(_ tokens: SessionTokens) { self.tokens = tokens }
    public func removeTokens() { tokens = nil }
}

/// Whether a session is signed in.
public enum AccountSessionState: Sendable, Equatable {
    case signedOut
    /// Signed in as the user with this id (nil when the server did not say).
    case signedIn(userID: String?)
}

/// What happened to a session, as ``AccountSession/events()`` tells it.
public enum AccountSessionEvent: Sendable, Equatable {
    /// Signed in (``AccountSession/logIn(email:password:)``, ``AccountSession/register(email:password:profile:)``).
    case signedIn(userID: String?)
    /// A new access token: requests refused before may succeed now (a `SyncStore` following the
    /// session resumes its outbox).
    case refreshed(userID: String?)
    /// Signed out: by the app (nil), or because the server refused the refresh token.
    case signedOut(AccountSessionError?)
}

/// Why a session could not do what was asked.
///
/// A struct with static members, not an enum (as Hummingbird's `HTTPError` and postgres-nio's
/// `PSQLError`): a new kind of failure is a new ``Code`` value, which breaks no caller's exhaustive
/// `switch`. Compare ``code`` with the static members, or the whole error for equality.
public struct AccountSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of an ``AccountSessionError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable { case notSignedIn, refreshRefused, unexpectedAnswer }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// There are no tokens: sign in first.
        public static let notSignedIn = Code(.notSignedIn)
        /// The server refused the refresh token (400 or 401: expired, revoked, used already): the
        /// session has ended and its tokens are forgotten. Sign in again (``status``, ``message``).
        public static let refreshRefused = Code(.refreshRefused)
        /// The server's answer lacked a token, or was not JSON (``message``).
        public static let unexpectedAnswer = Code(.unexpectedAnswer)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The HTTP status of the refusal, for ``Code/refreshRefused``.
    public let status: Int?
    /// The server's message (``Code/refreshRefused``), or what was wrong with its answer
    /// (``Code/unexpectedAnswer``).
    public let message: String?

    private init(_ code: Code, status: Int? = nil, message: String? = nil) { (self.code, self.status, self.message) = (code, status, message) }

    /// There are no tokens: sign in first.
    public static let notSignedIn = AccountSessionError(.notSignedIn)
    /// The server refused the refresh token with `status`: the session has ended.
    public static func refreshRefused(status: Int, message: String) -> AccountSessionError {
        AccountSessionError(.refreshRefused, status: status, message: message)
    }
    /// The server's answer lacked a token, or was not JSON.
    public static func unexpectedAnswer(_ what: String) -> AccountSessionError { AccountSessionError(.unexpectedAnswer, message: what) }

    public var description: String {
        switch code {
        case .notSignedIn: "not signed in"
        case .refreshRefused: "the server refused the refresh token (HTTP \(status ?? 0)): \(message ?? ""); sign in again"
        case .unexpectedAnswer: "unexpected answer: \(message ?? "")"
        default: "account session error \(code)"
        }
    }
}

/// A signed-in account of a modelsync-server (or any json-server-auth-compatible server with
/// `POST /token`): it signs in, keeps the tokens in a ``SessionTokenStorage``, and, as a
/// ``RemoteInterceptor`` of a ``RemoteStore``, authorizes every request.
///
/// ```swift
/// let session = AccountSession(baseURL: url, storage: KeychainTokens())
/// var options = RemoteStore.Options()
/// options.interceptors.append(session)
/// let api = RemoteStore(baseURL: url, options: options)
/// try await session.logIn(email: "ann@example.com", password: "correct horse")
/// let posts = try await api.list(Post.self)          // Authorization: Bearer …
/// ```
///
/// - A request gets `Authorization: Bearer <access token>` (unless it has an `Authorization`
///   already); none while signed out.
/// - Shortly before the access token expires (``refreshMargin``), and once on a 401, the session
///   refreshes (`POST /token`) and the request goes with the new token; the 401's request is
///   sent again once. Concurrent requests share one refresh.
/// - A refresh refused by the server (400 / 401) ends the session: ``state`` becomes
///   ``AccountSessionState/signedOut``, the storage is cleared, ``events()`` tells
///   ``AccountSessionEvent/signedOut(_:)`` with ``AccountSessionError/refreshRefused(status:message:)``,
///   and ``refresh()`` throws it. Requests then go without a token.
/// - A refresh that fails otherwise (no network, a 5xx) keeps the tokens: the next one sends the
///   same refresh token, which the server answers with the same successor when the first
///   exchange was applied and its answer lost.
public final class AccountSession: RemoteInterceptor, Sendable {
    /// The server's address (`/login`, `/register`, `/token` and `/logout` are under it).
    public let baseURL: URL
    /// How long before its expiry an access token is refreshed.
    public let refreshMargin: Duration
    private let transport: any HTTPTransport
    private let storage: any SessionTokenStorage
    private let logger: Logger

    private struct State {
        var loaded = false
        var tokens: SessionTokens?
        var refreshing: Task<SessionTokens, any Error>?
        /// Bumped by every sign-in and sign-out: a refresh begun before does not apply after.
        var generation = 0
        var observers: [Int: AsyncStream<AccountSessionEvent>.Continuation] = [:]
        var nextObserver = 0
    }

    private let shared = Locked(State())

    /// Creates a session with the server at `baseURL`.
    ///
    /// - Parameters:
    ///   - baseURL: The server: `/register`, `/login`, `/token` and `/logout` are below it.
    ///   - transport: Sends the session's own requests (sign-in, refresh, sign-out).
    ///   - storage: Keeps the tokens; the session reads it on first use.
    ///   - refreshMargin: How long before its expiry an access token is refreshed; 30 seconds.
    ///   - logger: Where sign-ins, refreshes and refusals are logged.
    public init(
        baseURL: URL, transport: any HTTPTransport = AsyncHTTPClientTransport(), storage: any SessionTokenStorage = InMemorySessionTokenStorage(),
        refreshMargin: Duration = .seconds(30), logger: Logger = Logger(label: "modelsync.session")
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.storage = storage
        self.refreshMargin = refreshMargin
        self.logger = logger
    }

    deinit {
        shared.withLock { state in
            for observer in state.observers.values { observer.finish() }
        }
    }

    // MARK: State

    /// Whether the session is signed in (as far as it knows: after ``restore()`` or a first use,
    /// the storage's tokens count).
    public var state: AccountSessionState {
        shared.withLock { state in state.tokens.map { .signedIn(userID: $0.userID) } ?? .signedOut }
    }

    /// The tokens held now, nil while signed out.
    public var tokens: SessionTokens? {
        shared.withLock { $0.tokens }
    }

    /// Every sign-in, refresh and sign-out from now on.
    public func events() -> AsyncStream<AccountSessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AccountSessionEvent.self)
        let id = shared.withLock { state in
            defer { state.nextObserver += 1 }
            state.observers[state.nextObserver] = continuation
            return state.nextObserver
        }
        continuation.onTermination = { [weak self] _ in _ = self?.shared.withLock { $0.observers.removeValue(forKey: id) } }
        return stream
    }

    /// Reads the storage's tokens (once; later calls answer the state) and answers the state.
    @discardableResult
    public func restore() async throws -> AccountSessionState {
        _ = try await currentTokens()
        return state
    }

    // MARK: Signing in and out

    /// Creates an account (`POST /register`) and signs in: `profile`'s members become the
    /// account's record. Returns the record.
    ///
    /// - Throws: ``RemoteError/status(_:)`` when the server refuses (400: a short password, an
    ///   email that is not one; 409: the email has an account); a transport error.
    @discardableResult
    public func register(email: String, password: String, profile: JSONObject = JSONObject()) async throws -> JSONValue {
        var body = profile
        (body["email"], body["password"]) = (.string(email), .string(password))
        return try await signIn(path: "register", body: .object(body))
    }

    /// Signs in (`POST /login`). Returns the account's record.
    ///
    /// - Throws: ``RemoteError/status(_:)`` when the server refuses (400: an unknown email or a
    ///   wrong password); a transport error.
    @discardableResult
    public func logIn(email: String, password: String) async throws -> JSONValue {
        try await signIn(path: "login", body: ["email": .string(email), "password": .string(password)])
    }

    /// Signs out: revokes the refresh token on the server (`POST /logout`, which may fail
    /// unheard: the session ends anyway), forgets the tokens and tells ``events()``.
    public func signOut() async {
        let tokens = shared.withLock { state in
            state.generation += 1
            state.refreshing = nil
            return state.tokens
        }
        if let refreshToken = tokens?.refreshToken {
            do {
                _ = try await post("logout", ["refreshToken": .string(refreshToken)], timeout: .seconds(10))
            } catch {
                logger.notice("the server did not hear the sign-out; the refresh token expires unused", metadata: ["error": "\(error)"])
            }
        }
        await end(nil)
    }

    /// Changes the account's password (`POST /_accounts/<id>/password`) and keeps the tokens the
    /// server answers: every other device's session ends (its requests get 401, its refresh is
    /// refused), this one goes on.
    ///
    /// - Throws: ``AccountSessionError/notSignedIn``; ``RemoteError/status(_:)`` when the server
    ///   refuses (400: a wrong current password or a short new one; 429: too many attempts); a
    ///   transport error.
    public func changePassword(current: String, new: String) async throws {
        let (path, bearer) = try await ownAccountPath("password")
        let response = try await post(path, ["password": .string(current), "newPassword": .string(new)], bearer: bearer)
        guard response.isSuccess else {
            throw RemoteError.status(HTTPStatusError(response: response, request: RequestSummary(RemoteRequest(method: .post, url: url(path)))))
        }
        var tokens = try Self.tokens(in: try Self.answer(of: response), status: response.status)
        tokens.userID = try await currentTokens()?.userID ?? tokens.userID
        shared.withLock { state in
            state.generation += 1
            state.refreshing = nil
            (state.loaded, state.tokens) = (true, tokens)
        }
        await keep(tokens)
    }

    /// Signs the account out on every device, this one included (`POST /_accounts/<id>/logout`):
    /// every access token is refused from its next request, every refresh token revoked.
    ///
    /// - Throws: ``AccountSessionError/notSignedIn``; ``RemoteError/status(_:)`` or a transport
    ///   error when the server did not do it (the session here goes on).
    public func signOutEverywhere() async throws {
        let (path, bearer) = try await ownAccountPath("logout")
        let response = try await post(path, JSONValue.object([:]), bearer: bearer)
        // A 401: the account's sessions had ended already.
        guard response.isSuccess || response.status == 401 else {
            throw RemoteError.status(HTTPStatusError(response: response, request: RequestSummary(RemoteRequest(method: .post, url: url(path)))))
        }
        shared.withLock { state in
            state.generation += 1
            state.refreshing = nil
        }
        await end(nil)
    }

    /// `_accounts/<user id>/<action>` and a valid access token.
    private func ownAccountPath(_ action: String) async throws -> (path: String, bearer: String) {
        guard let userID = try await currentTokens()?.userID, let bearer = try await accessToken() else { throw AccountSessionError.notSignedIn }
        return ("_accounts/\(userID)/\(action)", bearer)
    }

    // MARK: Refreshing

    /// Gets a new access token (`POST /token`) now; concurrent calls (and requests that need
    /// one) share one refresh.
    ///
    /// - Throws: ``AccountSessionError/notSignedIn``; ``AccountSessionError/refreshRefused(status:message:)``
    ///   when the server refuses the refresh token (the session has ended); a transport error or
    ///   ``RemoteError/status(_:)`` for another failure (the tokens are kept: call again).
    public func refresh() async throws {
        _ = try await refreshed(replacing: nil)
    }

    /// A valid access token: the current one, or a new one when it expires within
    /// ``refreshMargin``; nil while signed out.
    public func accessToken() async throws -> String? {
        guard let tokens = try await currentTokens() else { return nil }
        guard let expiresAt = tokens.expiresAt, tokens.refreshToken != nil,
              Date().addingTimeInterval(refreshMargin.timeInterval) >= expiresAt
        else { return tokens.accessToken }
        do {
            return try await refreshed(replacing: tokens.accessToken).accessToken
        } catch let error as AccountSessionError {
            // Refused: the session has ended, requests go without a token.
            logger.debug("no token for the request", metadata: ["error": "\(error)"])
            return nil
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // Unreachable now: the old token may still do (the server's 401 will say).
            logger.notice("refreshing the access token failed; the request goes with the current one", metadata: ["error": "\(error)"])
            return tokens.accessToken
        }
    }

    /// The tokens after a refresh; when `stale` (an access token a request was sent with) is
    /// no longer the current one, the current ones, without asking the server again.
    private func refreshed(replacing stale: String?) async throws -> SessionTokens {
        guard try await currentTokens() != nil else { throw AccountSessionError.notSignedIn }
        let task: Task<SessionTokens, any Error> = try shared.withLock { state in
            if let stale, let current = state.tokens, current.accessToken != stale { return Task { current } }
            if let running = state.refreshing { return running }
            guard let tokens = state.tokens else { throw AccountSessionError.notSignedIn }
            guard let refreshToken = tokens.refreshToken else {
                throw AccountSessionError.unexpectedAnswer("the server gave no refresh token")
            }
            let generation = state.generation
            let task = Task { try await self.exchange(refreshToken, tokens, generation: generation) }
            state.refreshing = task
            return task
        }
        return try await task.value
    }

    private func exchange(_ refreshToken: String, _ old: SessionTokens, generation: Int) async throws -> SessionTokens {
        defer {
            shared.withLock { state in
                if state.generation == generation { state.refreshing = nil }
            }
        }
        let response = try await post("token", ["refreshToken": .string(refreshToken)])
        if response.status == 400 || response.status == 401 {
            let message = Self.errorMessage(response)
            let error = AccountSessionError.refreshRefused(status: response.status, message: message)
            // Only the session the refresh was for ends (not one signed in since): checked and
            // moved on under one lock, so that a sign-in in between is never ended.
            let ends = shared.withLock { state in
                guard state.generation == generation else { return false }
                state.generation += 1
                return true
            }
            if ends { await end(error) }
            throw error
        }
        guard response.isSuccess else { throw RemoteError.status(HTTPStatusError(response: response, request: RequestSummary(tokenRequest))) }
        var tokens = try Self.tokens(in: Self.answer(of: response), status: response.status)
        tokens.userID = tokens.userID ?? old.userID
        let applied = shared.withLock { state in
            guard state.generation == generation else { return false }
            state.tokens = tokens
            return true
        }
        guard applied else { throw AccountSessionError.notSignedIn }
        await keep(tokens)
        publish(.refreshed(userID: tokens.userID))
        return tokens
    }

    // MARK: RemoteInterceptor

    public func prepare(_ request: inout RemoteRequest) async throws {
        guard request.headers["Authorization"] == nil, let token = try await accessToken() else { return }
        request.headers["Authorization"] = "Bearer " + token
    }

    public func inspect(_ response: RemoteResponse, for request: RemoteRequest) async throws -> InterceptorDecision {
        // A 401 on the resend that a refresh bought: a new token would not be used either.
        guard response.status == 401, !request.isInterceptorRetry, let sent = request.headers["Authorization"], sent.hasPrefix("Bearer "),
              let tokens = shared.withLock({ $0.tokens }), tokens.refreshToken != nil
        else { return .proceed }
        do {
            _ = try await refreshed(replacing: String(sent.dropFirst("Bearer ".count)))
            return .retry
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // The 401 stands (a SyncStore pauses its outbox until the next refresh).
            logger.notice("refreshing after a 401 failed", metadata: ["error": "\(error)"])
            return .proceed
        }
    }

    // MARK: Helpers

    private func currentTokens() async throws -> SessionTokens? {
        if let (loaded, tokens) = shared.withLock({ state in state.loaded ? (true, state.tokens) : nil }), loaded { return tokens }
        let stored = try await storage.loadTokens()
        return shared.withLock { state in
            if !state.loaded { (state.loaded, state.tokens) = (true, stored) }
            return state.tokens
        }
    }

    private func signIn(path: String, body: JSONValue) async throws -> JSONValue {
        let response = try await post(path, body)
        guard response.isSuccess else {
            throw RemoteError.status(HTTPStatusError(response: response, request: RequestSummary(RemoteRequest(method: .post, url: url(path)))))
        }
        let answer = try Self.answer(of: response)
        var tokens = try Self.tokens(in: answer, status: response.status)
        let user = answer["user"] ?? .null
        tokens.userID = user["id"].flatMap(Self.text) ?? tokens.userID
        shared.withLock { state in
            state.generation += 1
            state.refreshing = nil
            (state.loaded, state.tokens) = (true, tokens)
        }
        await keep(tokens)
        publish(.signedIn(userID: tokens.userID))
        return user
    }

    /// Forgets the tokens, here and in the storage, and tells the observers.
    private func end(_ error: AccountSessionError?) async {
        shared.withLock { state in
            (state.loaded, state.tokens, state.refreshing) = (true, nil, nil)
        }
        do {
            try await storage.removeTokens()
        } catch {
            logger.error("the token storage could not forget the tokens", metadata: ["error": "\(error)"])
        }
        publish(.signedOut(error))
    }

    private func keep(_ tokens: SessionTokens) async {
        do {
            try await storage.saveTokens(tokens)
        } catch {
            // The session goes on in memory; the next launch may have to sign in again.
            logger.error("the token storage could not keep the tokens", metadata: ["error": "\(error)"])
        }
    }

    private func publish(_ event: AccountSessionEvent) {
        for observer in shared.withLock({ Array($0.observers.values) }) { observer.yield(event) }
    }

    private func url(_ path: String) -> URL { baseURL.appendingPathComponent(path) }

    private var tokenRequest: RemoteRequest { RemoteRequest(method: .post, url: url("token")) }

    private func post(_ path: String, _ body: JSONValue, bearer: String? = nil, timeout: Duration? = nil) async throws -> RemoteResponse {
        var request = RemoteRequest(method: .post, url: url(path), headers: ["Content-Type": "application/json", "Accept": "application/json"], body: body.jsonBytes())
        if let bearer { request.headers["Authorization"] = "Bearer " + bearer }
        request.timeout = timeout
        return try await transport.send(request)
    }

    /// A sign-in's or refresh's answer, parsed once.
    private static func answer(of response: RemoteResponse) throws -> JSONValue {
        do {
            return try JSONValue(parsing: response.body)
        } catch {
            throw AccountSessionError.unexpectedAnswer("the answer is not JSON (HTTP \(response.status)): \(error)")
        }
    }

    /// The tokens of a sign-in's or refresh's answer.
    private static func tokens(in answer: JSONValue, status: Int) throws -> SessionTokens {
        guard let accessToken = answer["accessToken"]?.stringValue else {
            throw AccountSessionError.unexpectedAnswer("no accessToken in the answer (HTTP \(status))")
        }
        let expiresAt = answer["expiresIn"]?.doubleValue.map { Date().addingTimeInterval($0) } ?? expiry(ofJWT: accessToken)
        return SessionTokens(accessToken: accessToken, refreshToken: answer["refreshToken"]?.stringValue, expiresAt: expiresAt,
                             userID: subject(ofJWT: accessToken))
    }

    /// A JWT's payload, unverified (only its timing and subject are read: the server verifies).
    private static func payload(ofJWT token: String) -> JSONValue? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].utf8.count <= 16 * 1024 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONValue(parsing: Array(data))
    }

    static func expiry(ofJWT token: String) -> Date? {
        payload(ofJWT: token)?["exp"]?.doubleValue.map(Date.init(timeIntervalSince1970:))
    }

    private static func subject(ofJWT token: String) -> String? {
        payload(ofJWT: token)?["sub"].flatMap(text)
    }

    private static func text(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number: value.intValue.map(String.init) ?? value.doubleValue.map { String($0) }
        default: nil
        }
    }

    private static func errorMessage(_ response: RemoteResponse) -> String {
        (try? JSONValue(parsing: response.body))?["error"]?.stringValue ?? "HTTP \(response.status)"
    }
}
