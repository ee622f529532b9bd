import CSQLite
import Foundation

/// Serial access to a set of connections (the writer: one; the readers: up to N, opened on
/// demand), shared by synchronous callers, which block their thread, and async callers, which
/// suspend. Both go through one rule set:
///
/// - A connection runs one body at a time: a synchronous caller's on the caller's thread, an async
///   caller's on the connection's own thread while the task suspends.
/// - A connection is only ever held by code that is running, never by a task waiting for a
///   thread of the cooperative pool (which blocked synchronous callers may all occupy). Hence
///   an async body's connection is released on the connection's own thread as soon as the body
///   returns, before its task is resumed; and waiters are served first come, first served with
///   one exception: a released connection goes straight to a blocked thread, whereas an async
///   waiter is only woken to try again.
/// - A cancelled async waiter leaves the queue at once and throws `CancellationError`.
/// - While an async body runs, cancelling its task interrupts the connection's running
///   statement (`sqlite3_interrupt`) and makes its next statement fail, so the body ends
///   promptly; the caller then gets `CancellationError`.
/// - ``heldByCurrentThread()`` tells which connection the calling thread is inside, which is
///   how ``Database`` nests a read in a write and refuses a write in a read.
final class ConnectionPool: @unchecked Sendable {
    /// Its mutable members are used under the pool's lock.
    private final class Slot: @unchecked Sendable {
        let connection: SQLiteConnection
        /// Where async bodies run: the connection's own thread, so that a long statement never
        /// occupies a thread of the cooperative pool (which the task that cancels it may
        /// need), and the process has one thread per open connection, never more.
        let thread = ConnectionThread()
        /// The thread running a body on the connection.
        var owner: pthread_t?
        /// The async body the connection runs, so that a late cancellation handler never
        /// interrupts the next one.
        var runToken: UInt64 = 0

        init(_ connection: SQLiteConnection) { self.connection = connection }

        deinit { thread.stop() }
    }

    private struct AsyncWaiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private let condition = NSCondition()
    private var slots: [Slot] = []
    private var idle: [Slot] = []
    /// Slots being opened (they count towards `maximum`).
    private var opening = 0
    private var blockedThreads = 0
    private var asyncWaiters: [AsyncWaiter] = []
    private var nextID: UInt64 = 1
    private let maximum: Int
    private let open: @Sendable () throws -> SQLiteConnection

    /// A pool of exactly one, already open connection.
    init(single connection: SQLiteConnection) {
        let slot = Slot(connection)
        slots = [slot]
        idle = [slot]
        maximum = 1
        open = { throw SQLiteError.misuse("the pool is full") }
    }

    /// A pool that opens up to `maximum` connections with `open`, when callers need them.
    init(maximum: Int, open: @escaping @Sendable () throws -> SQLiteConnection) {
        self.maximum = max(1, maximum)
        self.open = open
    }

    /// The connection the calling thread runs a body on, if any.
    func heldByCurrentThread() -> SQLiteConnection? {
        let me = pthread_self()
        condition.lock()
        defer { condition.unlock() }
        for slot in slots where slot.owner.map({ pthread_equal($0, me) != 0 }) == true {
            return slot.connection
        }
        return nil
    }

    /// How many async callers wait for a connection (for tests).
    var asyncWaiterCount: Int { condition.withLock { asyncWaiters.count } }

    // MARK: - Synchronous

    /// Runs `body` with a connection, blocking the thread until one is free.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let slot = try acquireBlocking()
        condition.lock()
        slot.owner = pthread_self()
        condition.unlock()
        defer { release(slot) }
        return try body(slot.connection)
    }

    private func acquireBlocking() throws -> Slot {
        condition.lock()
        while true {
            if let slot = idle.popLast() {
                condition.unlock()
                return slot
            }
            if slots.count + opening < maximum {
                opening += 1
                condition.unlock()
                return try openSlot()
            }
            blockedThreads += 1
            condition.wait()
            blockedThreads -= 1
        }
    }

    // MARK: - Asynchronous

    /// Runs `body` with a connection, suspending (never blocking) until one is free. Task
    /// cancellation ends the wait, or interrupts `body`'s statements: see the type's rules.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let slot = try await acquireSuspending()
        let token: UInt64 = condition.withLock {
            nextID += 1
            slot.runToken = nextID
            return nextID
        }
        do {
            return try await withTaskCancellationHandler {
                // Checked after the handler is installed: a cancellation from now on interrupts.
                if Task.isCancelled {
                    release(slot)
                    throw CancellationError()
                }
                return try await withCheckedThrowingContinuation { continuation in
                    slot.thread.run {
                        // Set on the thread that runs the body, which does not suspend.
                        self.condition.withLock { slot.owner = pthread_self() }
                        let result = Result { try body(slot.connection) }
                        // Released here, before the task resumes: resuming needs a thread of the
                        // cooperative pool, which synchronous callers blocked waiting for this
                        // connection may all occupy. Clearing the token also keeps a late
                        // cancellation handler off the next body.
                        self.release(slot)
                        continuation.resume(with: result)
                    }
                }
            } onCancel: {
                self.interrupt(slot, token: token)
            }
        } catch let error as SQLiteError where error.code == SQLITE_INTERRUPT && Task.isCancelled {
            throw CancellationError()
        }
    }

    private func interrupt(_ slot: Slot, token: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        // Under the lock: the body cannot end (and another begin) while the flag is raised.
        guard slot.runToken == token else { return }
        slot.connection.interruption.raise()
        sqlite3_interrupt(slot.connection.handle)
    }

    private func acquireSuspending() async throws -> Slot {
        var wasWoken = false
        while true {
            let outcome: Slot?? = try condition.withLock { () throws -> Slot?? in
                if Task.isCancelled {
                    // A wake-up this waiter no longer uses goes to the next one.
                    if wasWoken, !idle.isEmpty || slots.count + opening < maximum { wakeOne()?.resume() }
                    throw CancellationError()
                }
                if let slot = idle.popLast() { return .some(slot) }
                if slots.count + opening < maximum {
                    opening += 1
                    return .some(nil)
                }
                return nil
            }
            switch outcome {
            case .some(.some(let slot)): return slot
            case .some(.none): return try openSlot()
            case .none:
                // After a wake-up lost to a barging caller, wait again at the head of the queue.
                try await waitForRelease(atHead: wasWoken)
                wasWoken = true
            }
        }
    }

    /// Suspends until a connection is released (then the caller tries again) or the task is
    /// cancelled.
    private func waitForRelease(atHead: Bool) async throws {
        let id: UInt64 = condition.withLock {
            nextID += 1
            return nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                condition.lock()
                if Task.isCancelled {
                    condition.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if !idle.isEmpty || slots.count + opening < maximum {
                    // Released between the caller's check and now.
                    condition.unlock()
                    continuation.resume()
                } else {
                    let waiter = AsyncWaiter(id: id, continuation: continuation)
                    if atHead { asyncWaiters.insert(waiter, at: 0) } else { asyncWaiters.append(waiter) }
                    condition.unlock()
                }
            }
        } onCancel: {
            condition.lock()
            let index = asyncWaiters.firstIndex { $0.id == id }
            let waiter = index.map { asyncWaiters.remove(at: $0) }
            condition.unlock()
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    // MARK: - Shared

    private func openSlot() throws -> Slot {
        do {
            let slot = Slot(try open())
            condition.withLock {
                opening -= 1
                slots.append(slot)
            }
            return slot
        } catch {
            condition.lock()
            opening -= 1
            let woken = wakeOne()
            condition.unlock()
            woken?.resume()
            throw error
        }
    }

    private func release(_ slot: Slot) {
        condition.lock()
        slot.owner = nil
        slot.runToken = 0
        slot.connection.interruption.lower()
        idle.append(slot)
        let woken = wakeOne()
        condition.unlock()
        woken?.resume()
    }

    /// Wakes a blocked thread if there is one (it takes the connection as soon as it runs),
    /// else returns the first async waiter to resume outside the lock. Called under the lock.
    private func wakeOne() -> CheckedContinuation<Void, any Error>? {
        if blockedThreads > 0 {
            condition.signal()
            return nil
        }
        return asyncWaiters.isEmpty ? nil : asyncWaiters.removeFirst().continuation
    }
}

/// Whether a connection's body was cancelled: raised by the cancellation handler, checked
/// before each statement starts (`sqlite3_interrupt` only stops statements that are running).
final class InterruptionFlag: Sendable {
    private let raised = AtomicWord()

    var isRaised: Bool { raised.value != 0 }
    func raise() { raised.value = 1 }
    func lower() { raised.value = 0 }
}

/// A word read and written atomically (acquire / release), for flags checked on every statement
/// or query, where a lock's two calls would cost more than the check (Swift's `Atomic` needs
/// newer Apple platforms).
final class AtomicWord: @unchecked Sendable {
    /// Read and written only through the shim's atomic loads and stores.
    private let word: UnsafeMutablePointer<UInt>

    init() {
        word = .allocate(capacity: 1)
        word.initialize(to: 0)
    }

    deinit { word.deallocate() }

    var value: UInt {
        get { modelsync_word_load(word) }
        set { modelsync_word_store(word, newValue) }
    }
}

/// A thread that runs the jobs given to it one at a time, in order.
///
/// A serial `DispatchQueue` would do the same, but Dispatch may drain it on a new thread each
/// time while idle ones linger: under load the process grew to dozens of threads. One thread per
/// connection bounds them by the pool's size.
final class ConnectionThread: @unchecked Sendable {
    private let condition = NSCondition()
    /// Used under `condition`.
    private var jobs: [@Sendable () -> Void] = []
    private var stopped = false

    init() {
        let thread = Thread { [self] in loop() }
        thread.name = "modelsync.connection"
        thread.start()
    }

    /// Runs `job` on the thread, after the jobs given before it.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Lets the thread end once its jobs are done.
    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}
