import Foundation
import Logging
import Testing

/// The test binary's logging is bootstrapped before any test: a logger made with the default
/// handler writes at `warning` (or `MODELSYNC_TEST_LOG_LEVEL`), so info lines stay out of a
/// passing run's output. Fails if the constructor in `TestLoggingStartup` did not run.
@Suite struct TestLoggingTests {
    @Test func theDefaultHandlerLogsAtWarningUnlessAsked() {
        let asked = ProcessInfo.processInfo.environment["MODELSYNC_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        #expect(Logger(label: "modelsync.test").logLevel == (asked ?? .warning))
    }
}
