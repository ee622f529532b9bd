import Foundation
import Logging

/// The test process's logging: every logger the library makes with its default handler writes
/// at `warning` and above, so that a passing run's output is the test runner's own (an info line
/// such as "conflict resolved" is the library working as meant). `MODELSYNC_TEST_LOG_LEVEL`
/// (`trace` … `critical`) asks for more or less; a test that needs a logger's lines makes its
/// own `Logger` with a handler of its own, which this does not touch.
///
/// Called once, before the tests start, by `TestLoggingStartup`'s constructor: Swift Testing has
/// no process-wide set-up hook, and `LoggingSystem.bootstrap` may run only once per process.
@_cdecl("modelsync_tests_bootstrap_logging")
public func bootstrapQuietTestLogging() {
    let requested = ProcessInfo.processInfo.environment["MODELSYNC_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
    let level = requested ?? .warning
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}
