// The system SQLite (Linux: `apt-get install libsqlite3-dev`; Apple platforms: the SDK).
#include <sqlite3.h>
#include <stdint.h>

/// Turns off SQLite's legacy misfeature that reads a double-quoted identifier naming no
/// column as a string literal in queries (`SELECT "colour"` gives the text 'colour' instead
/// of failing). `sqlite3_db_config` is variadic, which Swift cannot call.
static inline int modelsync_disable_dqs_dml(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)0);
}

/// An atomic word (see `AtomicWord`): a connection's interruption flag, read before every
/// statement, and answers about a model type read by every query.
static inline uintptr_t modelsync_word_load(const uintptr_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static inline void modelsync_word_store(uintptr_t *word, uintptr_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}
