/// A SQLite result code with a name: the primary codes (`.busy`, `.constraint`) and the
/// extended ones (`.constraintUnique`, `.busySnapshot`), so errors can be matched without
/// the C constants:
///
/// ```swift
/// catch let error as SQLiteError where error.extendedResultCode == .constraintUnique { … }
/// switch error.resultCode { case .busy, .locked: retry(); default: throw error }
/// ```
///
/// Codes this type has no name for still round-trip through ``rawValue``.
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as SQLite returns it.
    public let rawValue: Int32

    /// A code from its value.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code of an extended one (its low 8 bits): `.constraintUnique.primary == .constraint`.
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xFF) }

    /// The code's C name, `SQLITE_CONSTRAINT_UNIQUE`, or its number when it has no name here.
    public var description: String { Self.names[rawValue].map { "SQLITE_\($0)" } ?? String(rawValue) }

    // MARK: Primary codes

    /// `SQLITE_OK`.
    public static let ok = Self(rawValue: 0)
    /// `SQLITE_ERROR`: a generic error (bad SQL, a missing table).
    public static let error = Self(rawValue: 1)
    /// `SQLITE_INTERNAL`.
    public static let `internal` = Self(rawValue: 2)
    /// `SQLITE_PERM`: access permission denied.
    public static let permission = Self(rawValue: 3)
    /// `SQLITE_ABORT`: an operation was aborted (by a rollback or an interrupt).
    public static let abort = Self(rawValue: 4)
    /// `SQLITE_BUSY`: another connection holds a conflicting lock.
    public static let busy = Self(rawValue: 5)
    /// `SQLITE_LOCKED`: a conflict inside this connection's shared cache.
    public static let locked = Self(rawValue: 6)
    /// `SQLITE_NOMEM`.
    public static let noMemory = Self(rawValue: 7)
    /// `SQLITE_READONLY`: a write to a read-only database.
    public static let readOnly = Self(rawValue: 8)
    /// `SQLITE_INTERRUPT`: `sqlite3_interrupt` stopped the statement.
    public static let interrupt = Self(rawValue: 9)
    /// `SQLITE_IOERR`: the operating system reported an I/O error.
    public static let ioError = Self(rawValue: 10)
    /// `SQLITE_CORRUPT`: the database file is malformed.
    public static let corrupt = Self(rawValue: 11)
    /// `SQLITE_NOTFOUND`.
    public static let notFound = Self(rawValue: 12)
    /// `SQLITE_FULL`: the disk is full.
    public static let full = Self(rawValue: 13)
    /// `SQLITE_CANTOPEN`: the file cannot be opened.
    public static let cannotOpen = Self(rawValue: 14)
    /// `SQLITE_PROTOCOL`.
    public static let `protocol` = Self(rawValue: 15)
    /// `SQLITE_SCHEMA`: the schema changed.
    public static let schema = Self(rawValue: 17)
    /// `SQLITE_TOOBIG`: a string or blob over the size limit.
    public static let tooBig = Self(rawValue: 18)
    /// `SQLITE_CONSTRAINT`: a constraint was violated (see the extended code for which).
    public static let constraint = Self(rawValue: 19)
    /// `SQLITE_MISMATCH`: a value of the wrong type.
    public static let mismatch = Self(rawValue: 20)
    /// `SQLITE_MISUSE`: the API was used incorrectly.
    public static let misuse = Self(rawValue: 21)
    /// `SQLITE_NOLFS`.
    public static let noLargeFileSupport = Self(rawValue: 22)
    /// `SQLITE_AUTH`: an authorizer refused the statement.
    public static let authorization = Self(rawValue: 23)
    /// `SQLITE_RANGE`: a parameter index out of range.
    public static let range = Self(rawValue: 25)
    /// `SQLITE_NOTADB`: the file is not a database.
    public static let notADatabase = Self(rawValue: 26)

    // MARK: Extended codes

    /// `SQLITE_CONSTRAINT_CHECK`: a `CHECK` constraint failed.
    public static let constraintCheck = Self(rawValue: 19 | 1 << 8)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`: a foreign key constraint failed.
    public static let constraintForeignKey = Self(rawValue: 19 | 3 << 8)
    /// `SQLITE_CONSTRAINT_NOTNULL`: `NULL` in a `NOT NULL` column.
    public static let constraintNotNull = Self(rawValue: 19 | 5 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`: a duplicate primary key.
    public static let constraintPrimaryKey = Self(rawValue: 19 | 6 << 8)
    /// `SQLITE_CONSTRAINT_TRIGGER`: a trigger's `RAISE`.
    public static let constraintTrigger = Self(rawValue: 19 | 7 << 8)
    /// `SQLITE_CONSTRAINT_UNIQUE`: a duplicate in a `UNIQUE` column or index.
    public static let constraintUnique = Self(rawValue: 19 | 8 << 8)
    /// `SQLITE_CONSTRAINT_ROWID`: a duplicate rowid.
    public static let constraintRowID = Self(rawValue: 19 | 10 << 8)
    /// `SQLITE_CONSTRAINT_DATATYPE`: a value of the wrong type in a `STRICT` table.
    public static let constraintDataType = Self(rawValue: 19 | 12 << 8)
    /// `SQLITE_BUSY_RECOVERY`: another connection is recovering the WAL.
    public static let busyRecovery = Self(rawValue: 5 | 1 << 8)
    /// `SQLITE_BUSY_SNAPSHOT`: a read transaction's snapshot is stale and cannot write.
    public static let busySnapshot = Self(rawValue: 5 | 2 << 8)
    /// `SQLITE_BUSY_TIMEOUT`.
    public static let busyTimeout = Self(rawValue: 5 | 3 << 8)
    /// `SQLITE_LOCKED_SHAREDCACHE`.
    public static let lockedSharedCache = Self(rawValue: 6 | 1 << 8)
    /// `SQLITE_READONLY_DBMOVED`: the file was moved or deleted while open.
    public static let readOnlyDatabaseMoved = Self(rawValue: 8 | 4 << 8)
    /// `SQLITE_IOERR_READ`.
    public static let ioErrorRead = Self(rawValue: 10 | 1 << 8)
    /// `SQLITE_IOERR_SHORT_READ`.
    public static let ioErrorShortRead = Self(rawValue: 10 | 2 << 8)
    /// `SQLITE_IOERR_WRITE`.
    public static let ioErrorWrite = Self(rawValue: 10 | 3 << 8)
    /// `SQLITE_IOERR_FSYNC`.
    public static let ioErrorFsync = Self(rawValue: 10 | 4 << 8)
    /// `SQLITE_CORRUPT_INDEX`: an index does not match its table.
    public static let corruptIndex = Self(rawValue: 11 | 3 << 8)
    /// `SQLITE_CANTOPEN_ISDIR`: the path names a directory.
    public static let cannotOpenIsDirectory = Self(rawValue: 14 | 2 << 8)

    private static let names: [Int32: String] = [
        0: "OK", 1: "ERROR", 2: "INTERNAL", 3: "PERM", 4: "ABORT", 5: "BUSY", 6: "LOCKED", 7: "NOMEM",
        8: "READONLY", 9: "INTERRUPT", 10: "IOERR", 11: "CORRUPT", 12: "NOTFOUND", 13: "FULL",
        14: "CANTOPEN", 15: "PROTOCOL", 17: "SCHEMA", 18: "TOOBIG", 19: "CONSTRAINT", 20: "MISMATCH",
        21: "MISUSE", 22: "NOLFS", 23: "AUTH", 25: "RANGE", 26: "NOTADB",
        constraintCheck.rawValue: "CONSTRAINT_CHECK", constraintForeignKey.rawValue: "CONSTRAINT_FOREIGNKEY",
        constraintNotNull.rawValue: "CONSTRAINT_NOTNULL", constraintPrimaryKey.rawValue: "CONSTRAINT_PRIMARYKEY",
        constraintTrigger.rawValue: "CONSTRAINT_TRIGGER", constraintUnique.rawValue: "CONSTRAINT_UNIQUE",
        constraintRowID.rawValue: "CONSTRAINT_ROWID", constraintDataType.rawValue: "CONSTRAINT_DATATYPE",
        busyRecovery.rawValue: "BUSY_RECOVERY", busySnapshot.rawValue: "BUSY_SNAPSHOT", busyTimeout.rawValue: "BUSY_TIMEOUT",
        lockedSharedCache.rawValue: "LOCKED_SHAREDCACHE", readOnlyDatabaseMoved.rawValue: "READONLY_DBMOVED",
        ioErrorRead.rawValue: "IOERR_READ", ioErrorShortRead.rawValue: "IOERR_SHORT_READ",
        ioErrorWrite.rawValue: "IOERR_WRITE", ioErrorFsync.rawValue: "IOERR_FSYNC",
        corruptIndex.rawValue: "CORRUPT_INDEX", cannotOpenIsDirectory.rawValue: "CANTOPEN_ISDIR",
    ]
}
