import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import PostgresNIO
import ServerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server under requests meant to hurt it: `_like` patterns that backtrack,
/// statements that run long, change streams left unread or opened without end.
@Suite struct HostileRequestTests {
    /// Five posts whose titles are 28 `a`s and a `!`: `(a+)+$` over them ran 47 s with
    /// `NSRegularExpression`, and held up every other request meanwhile.
    static let backtrackingData: JSONValue = .object([
        "posts": .array((1...5).map { id in ["id": .number(JSONNumber(id)), "title": .string(String(repeating: "a", count: 28) + "!")] }),
    ])

    @Test(arguments: Backend.allCases) func likePatternsThatBacktrackAreAnswered(backend: Backend) async throws {
        try await withServer(Self.backtrackingData, backend: backend) { _, base async throws in
            for pattern in ["(a%2B)%2B%24", "(a%7Ca)%2B%24", "(a*)*b", "(.*a)%7B20%7D%24"] {
                let reply = try await send(.GET, "\(base)/posts?title_like=\(pattern)")
                #expect(reply.status == 200)
                #expect(reply.ids == [], "\(pattern)")
            }
            #expect(try await send(.GET, "\(base)/posts?title_like=%5E(a%2B)%2B!%24").ids == [1, 2, 3, 4, 5])
        }
    }

    @Test(arguments: Backend.allCases) func refusedPatternsAre400NamingTheProblem(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let refused = [
                ("(a)%5C1", "backreferences"), ("a(%3F%3Db)", "lookahead"), ("(%3F%3C%3Da)b", "lookbehind"), ("a%2B%2B", "possessive"),
                ("a%7B1000%7D", "to 100 at most"), (String(repeating: "a", count: LikePattern.maximumLength + 1), "longer than"),
            ]
            for (pattern, problem) in refused {
                let reply = try await send(.GET, "\(base)/posts?title_like=\(pattern)")
                #expect(reply.status == 400, "\(pattern)")
                let message = reply.json?["error"]?.stringValue ?? ""
                #expect(message.contains(problem) && message.contains("title_like"), "\(message)")
            }
        }
    }

    /// A list read filters outside the JSON-file backend's actor, off the cooperative pool and
    /// in turns: four hostile reads at once, each blocking its thread as a long filter would,
    /// leave a read by id answered. (On the pool, they held both of its threads on a 2-core
    /// machine.)
    @Test func aListReadInItsFilterHoldsUpNoOtherRequest() async throws {
        let hold = FilterHold()
        let root = try #require(Self.backtrackingData.objectValue)
        let backend = JSONFileBackend(root: root, file: nil, feedLimits: FeedLimits(), listProbe: { hold.enter() })
        let server = try await SyncServer.start(backend: backend, host: "127.0.0.1", port: 0, options: ServerOptions(), logger: SyncServer.defaultLogger)
        let base = server.baseURL.absoluteString
        let hostile = "\(base)/posts?title_like=(a%2B)%2B%24"
        do {
            let held = Task { try await send(.GET, hostile) }
            for await _ in hold.entered { break }
            let others = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<3 { group.addTask { try await send(.GET, hostile).status } }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            let reply = try await send(.GET, "\(base)/posts/1")
            let answeredWhileHeld = !hold.released.current
            hold.release()
            #expect(reply.status == 200)
            #expect(answeredWhileHeld, "the read by id waited for the held filter")
            #expect(try await held.value.status == 200)
            #expect(try await others.value == [200, 200, 200])
            // On the costly reads' threads, never the cooperative pool's.
            #expect(hold.onCostlyThreads.current == [true, true, true, true])
        } catch {
            hold.release()
            Issue.record(error)
        }
        await server.shutdown()
    }

    /// PostgreSQL cancels a statement past the statement timeout; the request answers 503 with
    /// its reason. Held deterministically: the test locks the table the read needs.
    @Test func aStatementPastTheTimeoutIs503() async throws {
        var database = try TestPostgres.database()
        try await SyncServer.importData(sampleData, into: database)
        database.statementTimeout = .milliseconds(300)
        let server = try await SyncServer.start(database: database, logger: TestPostgresLog.logger("server \(database.schema)"))
        let base = server.baseURL.absoluteString
        do {
            #expect(try await send(.GET, "\(base)/posts?title_like=a").status == 200)
            let schema = TestPostgres.quotedSchema(database)
            let reply = try await TestPostgres.withConnection(to: database, label: "lock") { connection in
                let logger = TestPostgresLog.logger("lock")
                for try await _ in try await connection.query("BEGIN", logger: logger) {}
                for try await _ in try await connection.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(schema).modelsync_state IN ACCESS EXCLUSIVE MODE"), logger: logger) {}
                let reply = try await send(.GET, "\(base)/posts?title_like=a")
                for try await _ in try await connection.query("ROLLBACK", logger: logger) {}
                return reply
            }
            #expect(reply.status == 503)
            #expect(reply.json?["reason"] == "statement_timeout")
            #expect(reply.header("Retry-After") != nil)
            // Normal use stays within it.
            #expect(try await send(.GET, "\(base)/posts?title_like=a").ids == [1, 2, 3, 4])
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    @Test func theStatementTimeoutIsReadFromTheURL() throws {
        #expect(try ServerDatabase(url: "postgres://u@localhost/db").statementTimeout == ServerDatabase.defaultStatementTimeout)
        #expect(try ServerDatabase(url: "postgres://u@localhost/db?statement_timeout=2500").statementTimeout == .milliseconds(2_500))
        #expect(try ServerDatabase(url: "postgres://u@localhost/db?statement_timeout=0").statementTimeout == nil)
        #expect(throws: ServerError.self) { try ServerDatabase(url: "postgres://u@localhost/db?statement_timeout=soon") }
    }

    // MARK: The change stream

    @Test(arguments: Backend.allCases) func aCallerMayOpenOnlySoManyStreams(backend: Backend) async throws {
        var options = ServerOptions(keepAliveInterval: .milliseconds(100))
        options.changeStreamLimits = ChangeStreamLimits(streamsPerCaller: 2)
        try await withServer(options: options, backend: backend) { server, _ async throws in
            let first = try StreamSocket(port: server.port, path: "/_changes/stream")
            let second = try StreamSocket(port: server.port, path: "/_changes/stream")
            #expect(await first.head().hasPrefix("HTTP/1.1 200"))
            #expect(await second.head().hasPrefix("HTTP/1.1 200"))
            let third = try StreamSocket(port: server.port, path: "/_changes/stream")
            let refused = await third.head()
            #expect(refused.hasPrefix("HTTP/1.1 429"))
            #expect(refused.lowercased().contains("retry-after"))
            third.close()
            // A stream that ends gives its place back (the server sees it gone at its next keep-alive).
            first.close()
            var accepted = false
            for _ in 0..<600 where !accepted {
                let again = try StreamSocket(port: server.port, path: "/_changes/stream")
                accepted = await again.head().hasPrefix("HTTP/1.1 200")
                again.close()
                if !accepted { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(accepted)
            second.close()
        }
    }

    /// A client that stops reading is disconnected once its stream holds the most events it
    /// may, instead of the server keeping every change for it; one that reads gets them all.
    @Test(arguments: Backend.allCases) func aStreamWhoseClientStopsReadingIsClosed(backend: Backend) async throws {
        var options = ServerOptions(maxBodySize: 2 << 20)
        options.changeStreamLimits = ChangeStreamLimits(bufferedEvents: 8)
        try await withServer(options: options, backend: backend) { server, base async throws in
            let stalled = try StreamSocket(port: server.port, path: "/_changes/stream?since=now", receiveBuffer: 4_096)
            let reading = try StreamSocket(port: server.port, path: "/_changes/stream?since=now")
            #expect(await stalled.head().hasPrefix("HTTP/1.1 200"))
            #expect(await reading.head().hasPrefix("HTTP/1.1 200"))
            let writes = 40
            let received = Task { await reading.readUntil(occurrences: writes, of: "event: change") }
            // Far more than the socket buffers between the two hold: the stream's writes wait.
            let title = String(repeating: "x", count: 512 * 1024)
            for _ in 0..<writes {
                #expect(try await send(.POST, "\(base)/posts", body: #"{"title": "\#(title)"}"#).status == 201)
            }
            #expect(await received.value, "the reading client did not get every change")
            let (bytes, closed) = await stalled.readToEnd()
            #expect(closed, "the stalled stream was not closed")
            let events = String(decoding: bytes, as: UTF8.self).components(separatedBy: "event: change").count - 1
            #expect(events < writes)
            stalled.close()
            reading.close()
        }
    }

    /// Under access rules each stream reads the feed after a commit: what it looks at is the
    /// writes since its cursor, not every record of the collection.
    @Test func aStreamReadsTheCommitNotTheCollection() throws {
        var book = Bookkeeping()
        for id in 1...10_000 { book.recordWrite(collection: "posts", record: ["id": .number(JSONNumber(id)), "userId": 1]) }
        let since = book.sequence
        book.recordWrite(collection: "posts", record: ["id": 5, "userId": 2])
        let written = book.recordsWritten(after: since, in: nil)
        #expect(written.records.map(\.stamp.version) == [since + 1])
        #expect(written.examined == 1)
        #expect(try book.changes(after: since, in: nil, limit: 10).changes.map(\.sequence) == [since + 1])
    }

    /// The recent writes give what every record's version gives, over writes, rewrites and
    /// deletions, past the log's capacity, and after a load.
    @Test func recentWritesAgreeWithEveryVersion() throws {
        var book = Bookkeeping()
        var random = SeededGenerator(seed: 17)
        for _ in 0..<(Bookkeeping.recentCapacity * 3) {
            let id = JSONValue.number(JSONNumber(Int(random.next() % 700)))
            let collection = random.next() % 2 == 0 ? "posts" : "comments"
            if random.next() % 5 == 0 {
                book.recordDelete(collection: collection, id: id, now: Date(), limits: FeedLimits())
            } else {
                book.recordWrite(collection: collection, record: ["id": id, "n": .number(JSONNumber(Int(random.next() % 100)))])
            }
        }
        func everyVersion(_ book: Bookkeeping, after since: Int) -> Set<String> {
            Set(book.versions.flatMap { collection, ids in ids.values.filter { $0.version > since }.map { "\(collection) \($0.version)" } })
        }
        func recent(_ book: Bookkeeping, after since: Int) -> Set<String> {
            Set(book.recordsWritten(after: since, in: nil).records.map { "\($0.collection) \($0.stamp.version)" })
        }
        for since in stride(from: 0, through: book.sequence, by: 97) {
            #expect(recent(book, after: since) == everyVersion(book, after: since), "after \(since)")
        }
        // After a load the writes before it are read from every version; those after, from the log.
        var root = JSONObject()
        for collection in ["posts", "comments"] { root[collection] = .array(book.versions[collection]?.values.map(\.record) ?? []) }
        root[Bookkeeping.member] = book.saved
        var loaded = Bookkeeping.extract(from: &root)
        #expect(!recent(loaded, after: 0).isEmpty)
        #expect(recent(loaded, after: 0) == everyVersion(loaded, after: 0))
        loaded.recordWrite(collection: "posts", record: ["id": 1])
        #expect(loaded.recordsWritten(after: loaded.sequence - 1, in: nil).examined == 1)
    }
}

/// Holds the first list read in its filter until released (at most a minute: without the fix
/// it holds the whole backend, and the test fails rather than waits for ever).
final class FilterHold: Sendable {
    let entered: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    private let gate = DispatchSemaphore(value: 0)
    /// Set once the filters go on (released, or after the hold's 60 s).
    let released = Locked(false)

    init() {
        (entered, signal) = AsyncStream.makeStream()
    }

    /// For each filter, whether it ran on a costly reads' thread.
    let onCostlyThreads = Locked([Bool]())

    /// Blocks every filter until released, as work would: a filter that computes, not one that
    /// waits.
    func enter() {
        onCostlyThreads.withLock { $0.append(LowPriorityThreads.isCurrentThreadOne) }
        signal.yield()
        guard !released.current else { return }
        _ = gate.wait(timeout: .now() + 60)
        released.withLock { $0 = true }
        // Wakes the next held filter, which wakes the one after it.
        gate.signal()
    }

    func release() {
        gate.signal()
    }
}

/// A change stream's client on a blocking socket (with a small receive buffer when asked),
/// which reads only when told: to stop reading, it does nothing. Reads run on a thread of
/// their own, and give up after a minute (a stream the server never closes).
final class StreamSocket: Sendable {
    private let descriptor: Int32

    init(port: Int, path: String, receiveBuffer: Int32? = nil) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            closeDescriptor(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { sendBytes(descriptor, $0) }
    }

    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    /// One read: its bytes, or nil at the end (or a reset, or the minute given up).
    private func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer[..<count]) : nil
    }

    /// The answer's head (and whatever came with it).
    func head() async -> String {
        await Self.onThread { [self] in
            var received: [UInt8] = []
            while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n"), let bytes = receive() { received += bytes }
            return String(decoding: received, as: UTF8.self)
        }
    }

    /// Reads until `text` has come `occurrences` times; false if the stream ended first.
    func readUntil(occurrences: Int, of text: String) async -> Bool {
        await Self.onThread { [self] in
            let needle = Array(text.utf8)
            var (found, tail) = (0, [UInt8]())
            while found < occurrences {
                guard let bytes = receive() else { return false }
                // The unread end of the last read may hold the start of a match.
                let window = tail + bytes
                var index = 0
                window.withUnsafeBytes { window in
                    needle.withUnsafeBytes { needle in
                        guard let start = window.baseAddress, let first = needle.first, let needleStart = needle.baseAddress else { return }
                        // memchr to each candidate: the titles between the events are long.
                        while index + needle.count <= window.count, let candidate = memchr(start + index, Int32(first), window.count - index) {
                            let offset = UnsafeRawPointer(candidate) - start
                            guard offset + needle.count <= window.count else { break }
                            if memcmp(candidate, needleStart, needle.count) == 0 {
                                found += 1
                                index = offset + needle.count
                            } else {
                                index = offset + 1
                            }
                        }
                    }
                }
                tail = Array(window[max(index, window.count - needle.count + 1)...])
            }
            return true
        }
    }

    /// Everything until the server ends the connection, and whether it did (rather than a
    /// minute running out).
    func readToEnd() async -> (bytes: [UInt8], closed: Bool) {
        await Self.onThread { [self] in
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            // Keep-alives would keep an open stream's reads coming for ever.
            let deadline = Date().addingTimeInterval(60)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    received += buffer[..<count]
                    if Date() > deadline { return (received, false) }
                    continue
                }
                // 0: the end; ECONNRESET: closed with bytes unread; EAGAIN: the minute ran out.
                return (received, count == 0 || errno == ECONNRESET)
            }
        }
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    deinit { closeDescriptor(descriptor) }
}

// The C functions, out of reach of the methods (and the tests' `send`) that share their names.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
    return Glibc.send(descriptor, bytes.baseAddress, bytes.count, 0)
    #else
    return Darwin.send(descriptor, bytes.baseAddress, bytes.count, 0)
    #endif
}
