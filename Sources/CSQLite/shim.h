// The system SQLite (Linux: `apt-get install libsqlite3-dev`; Apple platforms: the SDK).
#include <sqlite3.h>

/// Turns off SQLite's legacy misfeature that reads a double-quoted identifier naming no
/// column as a string literal in queries (`SELECT "colour"` gives the text 'colour' instead
/// of failing). `sqlite3_db_config` is variadic, which Swift cannot call.
static inline int modelsync_disable_dqs_dml(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)0);
}

/// An atomic flag, for a connection's interruption: read before every statement, so a lock's
/// two calls would cost more than the check (Swift's `Atomic` needs newer Apple platforms).
static inline int modelsync_flag_load(const int *flag) {
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static inline void modelsync_flag_store(int *flag, int value) {
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
}
