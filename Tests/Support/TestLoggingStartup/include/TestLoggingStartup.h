// Runs TestLogging's bootstrap when the test binary loads; nothing to call.
#ifndef MODELSYNC_TEST_LOGGING_STARTUP_H
#define MODELSYNC_TEST_LOGGING_STARTUP_H
#endif
