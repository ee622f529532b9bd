// The system SQLite (Linux: `apt-get install libsqlite3-dev`; Apple platforms: the SDK).
#include <sqlite3.h>

/// Turns off SQLite's legacy misfeature that reads a double-quoted identifier naming no
/// column as a string literal in queries (`SELECT "colour"` gives the text 'colour' instead
/// of failing). `sqlite3_db_config` is variadic, which Swift cannot call.
static inline int modelsync_disable_dqs_dml(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)0);
}
