import Foundation

/// A value guarded by a lock, for state shared between tasks and threads (fault rules, request
/// logs, caches). `NSLock` rather than `Synchronization.Mutex`, which draws false
/// ThreadSanitizer reports on Linux.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the current value.
    package var current: Value { withLock { $0 } }
}
