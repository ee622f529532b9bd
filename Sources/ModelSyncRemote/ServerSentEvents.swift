import Foundation

/// One event of a `text/event-stream` response (Server-Sent Events).
public struct ServerSentEvent: Sendable, Hashable {
    /// The `id:` field, if the event had one: the value to send as `Last-Event-ID` on reconnect.
    public var id: String?
    /// The `event:` field; `message` when absent.
    public var event: String
    /// The `data:` lines, joined by newlines.
    public var data: String

    /// Creates an event.
    public init(id: String? = nil, event: String = "message", data: String) {
        self.id = id
        self.event = event
        self.data = data
    }
}

/// Splits a `text/event-stream` body into events, whatever the chunks it arrives in (the
/// WHATWG parsing rules: lines end in LF, CR or CRLF; a blank line ends an event; lines
/// starting with `:` are comments).
struct ServerSentEventParser {
    /// The longest line kept; a longer one is cut, so that a hostile stream cannot grow memory.
    static let maximumLineLength = 1 << 20

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: String?
    private var event = ""
    private var data: [String] = []
    private var hasData = false

    mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") && lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = byte == UInt8(ascii: "\r")
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                if let event = endLine() { events.append(event) }
            } else if line.count < Self.maximumLineLength {
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            // A blank line dispatches the event, if it had data.
            defer { (event, data, hasData) = ("", [], false) }
            guard hasData else { return nil }
            return ServerSentEvent(id: id, event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"))
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.endIndex ? line.index(after: colon) : colon
        if valueStart < line.endIndex && line[valueStart] == UInt8(ascii: " ") { valueStart = line.index(after: valueStart) }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch name {
        case "data":
            data.append(value)
            hasData = true
        case "event": event = value
        case "id" where !value.contains("\0"): id = value
        default: break
        }
        return nil
    }
}

extension HTTPTransport {
    /// Sends `request` and hands over its body as it arrives. This default waits for the whole
    /// body and hands it over at once; ``AsyncHTTPClientTransport`` streams it.
    public func stream(_ request: RemoteRequest) async throws -> (response: RemoteResponse, body: AsyncThrowingStream<[UInt8], any Error>) {
        let response = try await send(request)
        let body = response.body
        return (RemoteResponse(status: response.status, headers: response.headers, body: []), AsyncThrowingStream { continuation in
            continuation.yield(body)
            continuation.finish()
        })
    }
}

extension RemoteStore {
    /// The Server-Sent Events of `url`, as they arrive: one connection, no reconnection (the
    /// caller reconnects, sending the last event's id as `lastEventID`). Cancelling the
    /// iterating task closes the connection.
    ///
    /// `opened` runs once the server has answered 2xx, before any event: from then on every
    /// event reaches the stream (for a client that reads what came before, e.g. by a pull, only
    /// once the stream will show what comes after).
    ///
    /// - Throws: from the iteration, ``RemoteError/status(_:)`` when the server answers other
    ///   than 2xx, and the transport's errors.
    public func events(
        at url: URL, lastEventID: String? = nil, headers: HeaderFields = HeaderFields(), opened: (@Sendable () -> Void)? = nil
    ) -> AsyncThrowingStream<ServerSentEvent, any Error> {
        var request = RemoteRequest(method: .get, url: url)
        for field in options.headers { request.headers[field.name] = field.value }
        for field in headers { request.headers[field.name] = field.value }
        request.headers["Accept"] = "text/event-stream"
        if let lastEventID { request.headers["Last-Event-ID"] = lastEventID }
        let (transport, interceptors) = (transport, options.interceptors)
        let prepared = request
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    // The interceptors prepare it (authentication); the stream is not retried or cached.
                    var outgoing = prepared
                    for interceptor in interceptors { try await interceptor.prepare(&outgoing) }
                    let (response, body) = try await transport.stream(outgoing)
                    guard (200..<300).contains(response.status) else {
                        var failed = response
                        for try await chunk in body { failed.body += chunk.prefix(64 << 10) }
                        throw RemoteError.status(HTTPStatusError(request: RequestSummary(outgoing), response: failed, fieldErrors: [:], validationError: nil))
                    }
                    opened?()
                    var parser = ServerSentEventParser()
                    for try await chunk in body {
                        for event in parser.feed(chunk) { continuation.yield(event) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
