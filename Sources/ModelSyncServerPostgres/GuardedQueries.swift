import Logging
import ModelSyncCore
import ModelSyncServer
import PostgresNIO

// postgres-nio (1.33.2) hands a query to its connection's channel without asking to hear of a
// failed write. On a connection that has closed (a connection the pool leased just as
// PostgreSQL ended it, or the `ROLLBACK` after a statement failed because the connection was
// lost) the query is dropped, and its caller waits forever: the second stall of issue #17, a
// server whose writes all waited behind one such query. Every statement of the backend goes
// through the guarded forms below, which fail with ``connectionClosed`` instead.

extension PostgresConnection {
    /// ``query(_:logger:file:line:)``, failing with ``PostgresBackend/connectionClosed`` when the
    /// connection is closed or closes before the query is answered. An error PostgreSQL raises
    /// while it runs a statement that returns rows comes with the rows: read them, or run the
    /// statement with ``guardedRun(_:logger:)``.
    func guardedQuery(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await guarded(logger) { connection in try await connection.query(query, logger: logger) }
    }

    /// Runs a statement for its effect, failing as ``guardedQuery(_:logger:)`` does and with
    /// any error PostgreSQL raises while it runs. Its rows are read and dropped: unread, such an
    /// error went unheard, and the transaction's `COMMIT` then rolled back without an error.
    func guardedRun(_ query: PostgresQuery, logger: Logger) async throws {
        try await guarded(logger) { connection in
            for try await _ in try await connection.query(query, logger: logger) {}
        }
    }

    /// The first row of a statement that gives at most one, or nil when it gives none, failing as
    /// ``guardedQuery(_:logger:)`` does. Every row is read, so that an error PostgreSQL raises
    /// after the first one still fails it.
    func guardedFirst<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, as type: (repeat each Column).Type, logger: Logger
    ) async throws -> (repeat each Column)? {
        var first: (repeat each Column)?
        for try await row in try await guardedQuery(query, logger: logger).decode(type) where first == nil { first = row }
        return first
    }

    /// A prepared statement's rows, failing as ``guardedQuery(_:logger:)`` does.
    func guardedExecute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row]
    where Statement.Row: Sendable {
        try await guarded(logger) { connection in
            var rows: [Statement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }

    /// Runs `operation` in a task of its own and waits for it or for the connection to close,
    /// whichever comes first. An operation left waiting on a closed connection stays suspended
    /// (nothing can resume it), but its caller goes on.
    private func guarded<T: Sendable>(
        _ logger: Logger, _ operation: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        if isClosed { throw PostgresBackend.connectionClosed }
        let outcome = SingleOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.attach(continuation)
            let watch = ClosingConnections.shared.watch(self) {
                if outcome.resume(with: .failure(PostgresBackend.connectionClosed)) {
                    logger.debug("a statement's connection closed before it was answered")
                }
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation(self)) } catch { result = .failure(error) }
                ClosingConnections.shared.unwatch(self, watch)
                outcome.resume(with: result)
            }
        }
    }
}

extension PostgresClient {
    /// A transaction on a leased connection, started by `begin`: postgres-nio's
    /// `withTransaction` with guarded statements (no `ROLLBACK` waits on a closed connection:
    /// PostgreSQL rolls back the transaction of a connection that ended).
    ///
    /// - Throws: what `body` throws; ``PostgresBackend/commitOutcomeUnknown`` when the
    ///   connection failed once `COMMIT` was sent; PostgreSQL's refusal of the `COMMIT`.
    func guardedTransaction<T>(
        begin: String = "BEGIN", logger: Logger, isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try await withConnection { connection in
            try await connection.guardedRun(PostgresQuery(unsafeSQL: begin), logger: logger)
            let value: T
            do {
                value = try await body(connection)
            } catch {
                try? await connection.guardedRun("ROLLBACK", logger: logger)
                throw error
            }
            do {
                try await connection.guardedRun("COMMIT", logger: logger)
            } catch where PostgresBackend.isUnanswered(error) {
                throw PostgresBackend.commitOutcomeUnknown
            }
            return value
        }
    }

    /// The rows of one statement, on a connection leased for it.
    func guardedRows<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, as type: (repeat each Column).Type, logger: Logger
    ) async throws -> [(repeat each Column)] {
        try await withConnection { connection in
            var rows: [(repeat each Column)] = []
            for try await row in try await connection.guardedQuery(query, logger: logger).decode(type) { rows.append(row) }
            return rows
        }
    }
}

/// The one outcome of a guarded operation: the first of its result and its connection's close.
private final class SingleOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var resumed = false
    }

    private let state = Locked(State())

    func attach(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Resumes the waiting caller, unless it was resumed already; whether it was not.
    @discardableResult
    func resume(with result: Result<T, any Error>) -> Bool {
        let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
            guard !state.resumed else { return nil }
            state.resumed = true
            return state.continuation
        }
        continuation?.resume(with: result)
        return continuation != nil
    }
}

/// Callbacks to run when a connection closes, registered on its `closeFuture` once per
/// connection (a callback a query would pile up there for the connection's whole life).
private final class ClosingConnections: Sendable {
    static let shared = ClosingConnections()

    private struct State {
        var watched: [ObjectIdentifier: [Int: @Sendable () -> Void]] = [:]
        var nextToken = 0
    }

    private let state = Locked(State())

    /// Runs `closed` when `connection` closes (at once if it has); returns what unwatches it.
    func watch(_ connection: PostgresConnection, _ closed: @escaping @Sendable () -> Void) -> Int {
        let key = ObjectIdentifier(connection)
        let (token, first) = state.withLock { state in
            state.nextToken += 1
            let first = state.watched[key] == nil
            state.watched[key, default: [:]][state.nextToken] = closed
            return (state.nextToken, first)
        }
        if first {
            connection.closeFuture.whenComplete { _ in
                let callbacks = self.state.withLock { $0.watched.removeValue(forKey: key) } ?? [:]
                for callback in callbacks.values { callback() }
            }
        }
        return token
    }

    func unwatch(_ connection: PostgresConnection, _ token: Int) {
        state.withLock { _ = $0.watched[ObjectIdentifier(connection)]?.removeValue(forKey: token) }
    }
}
