// The test binary's one process-wide set-up: the logging level (see QuietTestLogging.swift).
// A constructor, because Swift Testing runs no code before the first test that every target
// shares, and LoggingSystem.bootstrap must run once, before any logger is made.
#include "TestLoggingStartup.h"

extern void modelsync_tests_bootstrap_logging(void);

__attribute__((constructor)) static void modelsync_tests_logging_startup(void) {
    modelsync_tests_bootstrap_logging();
}
