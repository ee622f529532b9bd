import Foundation
import ModelSync
import ModelSyncCore

/// A transport that records real HTTP exchanges to a cassette file and replays them, so a
/// test of code that talks to a server runs without the server and always sees the same
/// answers.
///
/// ```swift
/// let transport = try CassetteTransport(cassette: URL(fileURLWithPath: "Tests/Cassettes/posts.json"))
/// let api = RemoteStore(baseURL: URL(string: "https://api.example.com")!, transport: transport)
/// let post = try await api.fetch(Post.self, id: 1)   // recorded on the first run, replayed after
/// ```
///
/// A request matches a recorded one with the same method, URL and body (JSON bodies are
/// compared as JSON values); headers are not compared. Recorded exchanges are replayed in
/// order: the first unused match answers, and when every match has been used the last one
/// answers again. While recording, the file is rewritten after every exchange, with the values
/// of secret headers replaced by `<redacted>`.
public final class CassetteTransport: HTTPTransport {
    /// What the transport does with requests.
    public enum Mode: Sendable, Equatable {
        /// Record when the cassette file does not exist yet, replay it when it does.
        case recordOnce
        /// Only replay: a request that matches no recorded one fails with
        /// ``CassetteError/unmatchedRequest(_:closest:cassette:)``, and a missing file with
        /// ``CassetteError/missingCassette(path:)``.
        case replayOnly
        /// Neither record nor replay: every request goes to the upstream transport.
        case passThrough
    }

    /// Header names (any case) whose values are never written to a cassette.
    public static let defaultRedactedHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
    ]

    /// The cassette file.
    public let file: URL
    /// The mode the transport was created with.
    public let mode: Mode
    /// Whether requests go to the upstream transport and are written to the cassette (record
    /// once, with no cassette file at creation).
    public let isRecording: Bool
    /// Lower-cased names of the headers whose values are redacted in the file.
    public let redactedHeaders: Set<String>
    /// Whether URLs must match in full; when false, only their path and query are compared, so
    /// a cassette recorded against a server on a random port replays against any base URL.
    public let matchesHost: Bool
    private let upstream: any HTTPTransport
    private let state: Locked<State>

    private struct State {
        var cassette: Cassette
        var used: [Bool]
    }

    /// Creates a transport over the cassette at `file` (read now, when it exists and the mode
    /// replays).
    ///
    /// - Parameters:
    ///   - file: The cassette, a JSON file.
    ///   - mode: Whether to record, replay or pass requests through.
    ///   - upstream: Where recorded and passed-through requests go.
    ///   - redactedHeaders: Header names, in any case, whose values are replaced in the file.
    ///   - matchesHost: False to compare URLs by path and query only.
    /// - Throws: ``CassetteError/unreadableCassette(path:reason:)`` for a file that is not a
    ///   cassette, ``CassetteError/missingCassette(path:)`` in `replayOnly` mode without one.
    public init(
        cassette file: URL, mode: Mode = .recordOnce, upstream: any HTTPTransport = AsyncHTTPClientTransport(),
        redactedHeaders: Set<String> = CassetteTransport.defaultRedactedHeaders, matchesHost: Bool = true
    ) throws {
        self.file = file
        self.mode = mode
        self.upstream = upstream
        self.redactedHeaders = Set(redactedHeaders.map { $0.lowercased() })
        self.matchesHost = matchesHost
        let exists = FileManager.default.fileExists(atPath: file.path)
        var cassette = Cassette()
        switch mode {
        case .passThrough:
            isRecording = false
        case .recordOnce where !exists:
            isRecording = true
        case .recordOnce, .replayOnly:
            guard exists else { throw CassetteError.missingCassette(path: file.path) }
            isRecording = false
            cassette = try Cassette(contentsOf: file)
        }
        state = Locked(State(cassette: cassette, used: Array(repeating: false, count: cassette.interactions.count)))
    }

    /// Replays, records or passes `request` through, depending on the mode.
    ///
    /// - Throws: ``CassetteError/unmatchedRequest(_:closest:cassette:)`` when replaying a
    ///   request the cassette does not have; ``CassetteError/cannotSave(path:reason:)`` when a
    ///   recording cannot be written; the upstream transport's errors otherwise.
    public func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        if mode == .passThrough { return try await upstream.send(request) }
        if isRecording { return try await record(request) }
        return try replay(request)
    }

    private func record(_ request: RemoteRequest) async throws -> RemoteResponse {
        let response = try await upstream.send(request)
        let interaction = Cassette.Interaction(
            method: request.method.rawValue, url: request.url.absoluteString, requestHeaders: request.headers,
            requestBody: request.body, response: response)
        // Appending and writing under one lock keeps the file in the order of the exchanges.
        try state.withLock { state in
            state.cassette.interactions.append(interaction)
            state.used.append(true)
            try save(state.cassette)
        }
        return response
    }

    private func save(_ cassette: Cassette) throws {
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try AtomicFile.replace(file, with: cassette.encoded(redacting: redactedHeaders))
        } catch {
            throw CassetteError.cannotSave(path: file.path, reason: error.localizedDescription)
        }
    }

    private func replay(_ request: RemoteRequest) throws -> RemoteResponse {
        let method = request.method.rawValue
        let url = comparable(request.url.absoluteString)
        let body = request.body ?? []
        return try state.withLock { state in
            let interactions = state.cassette.interactions
            let matches = interactions.indices.filter { index in
                let recorded = interactions[index]
                return recorded.method == method && comparable(recorded.url) == url
                    && Self.sameBody(recorded.requestBody ?? [], body)
            }
            // A request made more often than recorded gets the last answer again, but only when
            // it is idempotent: a second POST answered like the first never happened.
            let reusable = request.isIdempotent ? matches.last : nil
            guard let index = matches.first(where: { !state.used[$0] }) ?? reusable else {
                throw CassetteError.unmatchedRequest(
                    Self.describe(method, request.url.absoluteString, body),
                    closest: closest(to: method, url, body, in: interactions), cassette: file.path)
            }
            state.used[index] = true
            return interactions[index].response
        }
    }

    /// The URL as it is compared: whole, or path and query only.
    private func comparable(_ url: String) -> String {
        guard !matchesHost, let components = URLComponents(string: url) else { return url }
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }

    private static func sameBody(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        if a == b { return true }
        guard let left = try? JSONValue(parsing: a), let right = try? JSONValue(parsing: b) else { return false }
        return left == right
    }

    /// Up to three recorded requests most like the unmatched one (same path first, then same
    /// method, then same body), for the error message.
    private func closest(to method: String, _ url: String, _ body: [UInt8], in interactions: [Cassette.Interaction]) -> [String] {
        let path = URLComponents(string: url).map(\.percentEncodedPath) ?? url
        let scored = interactions.map { recorded -> (score: Int, text: String) in
            let recordedURL = comparable(recorded.url)
            let recordedPath = URLComponents(string: recordedURL).map(\.percentEncodedPath) ?? recordedURL
            let score = (recordedURL == url ? 4 : 0) + (recordedPath == path ? 4 : 0) + (recorded.method == method ? 2 : 0)
                + (Self.sameBody(recorded.requestBody ?? [], body) ? 1 : 0)
            return (score, Self.describe(recorded.method, recorded.url, recorded.requestBody ?? []))
        }
        var seen = Set<String>()
        return scored.enumerated()
            .sorted { ($0.element.score, -$0.offset) > ($1.element.score, -$1.offset) }
            .map(\.element.text)
            .filter { seen.insert($0).inserted }
            .prefix(3).map { $0 }
    }

    private static func describe(_ method: String, _ url: String, _ body: [UInt8]) -> String {
        guard !body.isEmpty else { return "\(method) \(url)" }
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return "\(method) \(url) \(text)\(body.count > 200 ? "…" : "")"
    }
}

/// Why a ``CassetteTransport`` could not answer.
public enum CassetteError: Error, Equatable, CustomStringConvertible {
    /// Replaying needs a cassette file and there is none at `path`.
    case missingCassette(path: String)
    /// The file at `path` is not a cassette.
    case unreadableCassette(path: String, reason: String)
    /// No recorded exchange matches the request (method, URL and body, as text); `closest`
    /// lists the most similar recorded requests.
    case unmatchedRequest(String, closest: [String], cassette: String)
    /// A recording could not be written to `path`.
    case cannotSave(path: String, reason: String)

    /// What went wrong, with the request and the closest recorded ones for an unmatched request.
    public var description: String {
        switch self {
        case .missingCassette(let path):
            return "no cassette at \(path) to replay"
        case .unreadableCassette(let path, let reason):
            return "the cassette at \(path) cannot be read: \(reason)"
        case .unmatchedRequest(let request, let closest, let cassette):
            let candidates = closest.isEmpty ? " (it is empty)" : ", closest:\n" + closest.map { "  \($0)" }.joined(separator: "\n")
            return "no recorded request matches \(request) in \(cassette)\(candidates)"
        case .cannotSave(let path, let reason):
            return "cannot save the cassette at \(path): \(reason)"
        }
    }
}
