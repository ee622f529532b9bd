// The system SQLite (Linux: `apt-get install libsqlite3-dev`; Apple platforms: the SDK).
#include <sqlite3.h>
