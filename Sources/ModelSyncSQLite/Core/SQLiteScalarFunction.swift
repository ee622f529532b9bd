import CSQLite
import Foundation

/// A Swift closure that SQL calls as a scalar function (`SELECT slugify(title) FROM …`).
///
/// ```swift
/// let slugify = SQLiteScalarFunction("slugify", argumentCount: 1, deterministic: true) { arguments in
///     guard case .text(let text) = arguments[0] else { return .null }
///     return .text(text.lowercased().replacingOccurrences(of: " ", with: "-"))
/// }
/// let db = try Database(path: path, configuration: DatabaseConfiguration(functions: [slugify]))
/// ```
///
/// Functions in ``DatabaseConfiguration/functions`` are registered on every connection the
/// database opens (the writer and each reader, including readers opened later);
/// ``SQLiteConnection/add(function:)`` registers one on a single connection. An error thrown
/// by the closure fails the statement that called it with a ``SQLiteError`` of kind
/// ``SQLiteError/Kind-swift.enum/functionFailed(name:)`` whose
/// ``SQLiteError/underlyingError`` is the thrown error; nothing traps.
public struct SQLiteScalarFunction: Sendable {
    /// The name SQL calls the function by (SQLite compares names ignoring ASCII case).
    public let name: String
    /// How many arguments the function takes, or nil for any number (0 to 127).
    public let argumentCount: Int?
    /// Whether the function always gives the same result for the same arguments: SQLite may
    /// then compute it once per statement, and use it in indexes and generated columns.
    public let isDeterministic: Bool
    let body: @Sendable ([SQLValue]) throws -> SQLValue

    /// Creates a function named `name` taking `argumentCount` arguments (nil: any number),
    /// computed by `body` from the arguments' values.
    public init(
        _ name: String,
        argumentCount: Int? = nil,
        deterministic: Bool = false,
        _ body: @escaping @Sendable ([SQLValue]) throws -> SQLValue
    ) {
        self.name = name
        self.argumentCount = argumentCount
        self.isDeterministic = deterministic
        self.body = body
    }
}

/// The error a scalar function threw while a statement ran on a connection, kept until the
/// statement's failure reaches Swift (SQLite itself keeps only the message).
final class FunctionFailureSlot {
    var failure: (name: String, error: any Error)?
}

/// What SQLite holds for one registration: the function and the connection's failure slot.
/// Released by SQLite's destructor callback when the function is replaced or the connection
/// closes.
private final class FunctionRegistration {
    let function: SQLiteScalarFunction
    // Strong: a statement that outlives its connection (SQLite then closes lazily) may still
    // call the function.
    let slot: FunctionFailureSlot

    init(_ function: SQLiteScalarFunction, slot: FunctionFailureSlot) {
        self.function = function
        self.slot = slot
    }

    func call(_ context: OpaquePointer, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
        var arguments: [SQLValue] = []
        arguments.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            arguments.append(values?[index].map(SQLValue.init(functionArgument:)) ?? .null)
        }
        do {
            try function.body(arguments).setResult(of: context)
        } catch {
            slot.failure = (function.name, error)
            sqlite3_result_error(context, "\(function.name): \(error)", -1)
        }
    }
}

extension SQLiteConnection {
    /// Registers `function` on this connection (replacing one of the same name and argument
    /// count). To have it on every connection of a ``Database``, list it in
    /// ``DatabaseConfiguration/functions`` instead.
    public func add(function: SQLiteScalarFunction) throws {
        if let count = function.argumentCount, !(0...127).contains(count) {
            throw SQLiteError.misuse("function \(function.name): SQLite functions take 0 to 127 arguments, not \(count)")
        }
        let registration = Unmanaged.passRetained(FunctionRegistration(function, slot: functionFailures)).toOpaque()
        let flags = SQLITE_UTF8 | (function.isDeterministic ? SQLITE_DETERMINISTIC : 0)
        let result = sqlite3_create_function_v2(
            handle, function.name, Int32(function.argumentCount ?? -1), flags, registration,
            { context, count, values in
                guard let context, let registration = sqlite3_user_data(context) else { return }
                Unmanaged<FunctionRegistration>.fromOpaque(registration).takeUnretainedValue().call(context, count, values)
            },
            nil, nil,
            { registration in
                guard let registration else { return }
                Unmanaged<FunctionRegistration>.fromOpaque(registration).release()
            })
        // On failure SQLite has already called the destructor.
        if result != SQLITE_OK { throw SQLiteError(result: result, handle: handle, sql: nil) }
    }

    /// `error` with the failure of a scalar function it comes from, if one failed since the
    /// last statement began: the kind names the function, the cause is what it threw.
    func attachingFunctionFailure(_ error: SQLiteError) -> SQLiteError {
        guard let failure = functionFailures.failure else { return error }
        functionFailures.failure = nil
        var error = error
        error.kind = .functionFailed(name: failure.name)
        error.underlyingError = failure.error
        return error
    }
}

extension SQLValue {
    /// A function argument's value (`sqlite3_value`).
    init(functionArgument value: OpaquePointer) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(value))
            self = .text(sqlite3_value_text(value).map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            self = .blob(count > 0 ? sqlite3_value_blob(value).map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? [] : [])
        default: self = .null
        }
    }

    /// Makes the value the result of a function call.
    func setResult(of context: OpaquePointer) {
        switch self {
        case .null: sqlite3_result_null(context)
        case .integer(let value): sqlite3_result_int64(context, value)
        case .real(let value): sqlite3_result_double(context, value)
        case .text(var text):
            text.withUTF8 { bytes in
                // An empty buffer may have no address, and a nil pointer is NULL: "" is text.
                guard bytes.count > 0 else { return sqlite3_result_text(context, "", 0, sqliteTransient) }
                bytes.withMemoryRebound(to: CChar.self) {
                    sqlite3_result_text(context, $0.baseAddress, Int32($0.count), sqliteTransient)
                }
            }
        case .blob(let bytes):
            bytes.withUnsafeBytes { buffer in
                if let base = buffer.baseAddress, buffer.count > 0 {
                    sqlite3_result_blob(context, base, Int32(buffer.count), sqliteTransient)
                } else {
                    sqlite3_result_zeroblob(context, 0)
                }
            }
        }
    }
}
