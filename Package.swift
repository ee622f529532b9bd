// swift-tools-version: 6.2
// 6.2: Hummingbird 2.28, which the server depends on, declares it; Swift Testing's traits need 6.1.
import CompilerPluginSupport
import PackageDescription

// Layers (see docs/ARCHITECTURE.md):
//   ModelSyncCore ← ModelSyncJSON ← {ModelSyncRemote, ModelSyncSQLite, ModelSyncStorage} ← ModelSync
//   (the umbrella re-exports them and joins the stores). The middle layers never import each
//   other. Each layer is a product of its own and re-exports the layers below it; ModelSyncJSON
//   declares the macros (ModelSyncMacros, a compiler plugin), so `@Model` comes with any of them.
//   ModelSyncJSON ← ModelSyncProtocol (the sync messages) ← {ModelSync, ModelSyncServer}.
//   ModelSyncJSON ← ModelSyncServer ← {ModelSyncServerPostgres, ModelSyncServerSQLite} ← modelsync-server
//   (products of their own, not re-exported; only the PostgreSQL one builds postgres-nio).
//   ModelSyncServer ← ModelSyncServerAuth (JWTs with jwt-kit, bcrypt) ← modelsync-server: the
//   server itself builds no crypto package.
//   ModelSync + ModelSyncServer ← ModelSyncTesting (for users' tests; not re-exported).
let package = Package(
    name: "ModelSync",
    // Hummingbird's API (the server, the testing toolkit) and the Observation module (the
    // observable query and resource objects) start at these versions. One floor for the package
    // rather than per-declaration availability: this floor is checked by every Apple build.
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .macCatalyst(.v17), .visionOS(.v1)],
    products: [
        .library(name: "ModelSync", targets: ["ModelSync"]),
        .library(name: "ModelSyncJSON", targets: ["ModelSyncJSON"]),
        .library(name: "ModelSyncStorage", targets: ["ModelSyncStorage"]),
        .library(name: "ModelSyncSQLite", targets: ["ModelSyncSQLite"]),
        .library(name: "ModelSyncRemote", targets: ["ModelSyncRemote"]),
        .library(name: "ModelSyncProtocol", targets: ["ModelSyncProtocol"]),
        .executable(name: "modelsync-demo", targets: ["modelsync-demo"]),
        .library(name: "ModelSyncServer", targets: ["ModelSyncServer"]),
        .library(name: "ModelSyncServerPostgres", targets: ["ModelSyncServerPostgres"]),
        .library(name: "ModelSyncServerSQLite", targets: ["ModelSyncServerSQLite"]),
        .library(name: "ModelSyncServerAuth", targets: ["ModelSyncServerAuth"]),
        .executable(name: "modelsync-server", targets: ["modelsync-server"]),
        .library(name: "ModelSyncTesting", targets: ["ModelSyncTesting"]),
    ],
    dependencies: [
        // A range of majors, so that other macro packages in an app can pick theirs: the macro
        // builds against both ends of the range (600.0.1 and 603.0.1 checked).
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "600.0.0"..<"604.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        // SHA-256 of refresh tokens (already a dependency of jwt-kit's).
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"6.0.0"),
    ],
    targets: [
        // Core: the Model protocol, schemas and field types. No dependencies.
        .target(name: "ModelSyncCore"),
        // JSON: a tape-based reader, a writer, the runtime the generated codecs call, and the
        // macro declarations.
        .target(name: "ModelSyncJSON", dependencies: ["ModelSyncCore", "ModelSyncMacros"]),
        // SQLite: the system libsqlite3 (Linux: `apt-get install libsqlite3-dev`), a thin layer
        // over its C API, ActiveRecord and migrations. On JSON only for JSON-text columns;
        // swift-log for statement tracing.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .target(
            name: "ModelSyncSQLite",
            dependencies: ["ModelSyncCore", "ModelSyncJSON", "CSQLite", .product(name: "Logging", package: "swift-log")]
        ),
        // Protocol: the sync messages as types, shared by SyncStore and the server (docs/PROTOCOL.md).
        .target(name: "ModelSyncProtocol", dependencies: ["ModelSyncJSON"]),
        // Storage: key-value suites on disk, values as JSON files replaced atomically.
        .target(name: "ModelSyncStorage", dependencies: ["ModelSyncCore", "ModelSyncJSON"]),
        // The @Model compiler plugin.
        .macro(
            name: "ModelSyncMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // Umbrella: re-exports the layers; the cache and sync join the SQLite and REST layers.
        .target(
            name: "ModelSync",
            dependencies: [
                "ModelSyncCore", "ModelSyncJSON", "ModelSyncSQLite", "ModelSyncRemote", "ModelSyncStorage", "ModelSyncProtocol",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "modelsync-demo", dependencies: ["ModelSync", "ModelSyncServer", "ModelSyncServerSQLite", "ModelSyncServerAuth"]),

        // Remote: RemoteStore over an HTTPTransport (AsyncHTTPClient by default, URLSession).
        .target(
            name: "ModelSyncRemote",
            dependencies: [
                "ModelSyncCore",
                "ModelSyncJSON",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Server: a json-server-compatible REST server on Hummingbird's router, over a JSON file.
        .target(
            name: "ModelSyncServer",
            dependencies: [
                "ModelSyncCore",
                "ModelSyncJSON",
                "ModelSyncProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                // The backup download's copy: opened, unlinked, then read (Hummingbird builds it anyway).
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The server over PostgreSQL (postgres-nio): a target of its own, so that what serves a
        // JSON file (the demo, ModelSyncTesting) never builds postgres-nio and swift-crypto.
        .target(
            name: "ModelSyncServerPostgres",
            dependencies: [
                "ModelSyncCore",
                "ModelSyncJSON",
                "ModelSyncProtocol",
                "ModelSyncServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The server over a SQLite file, on the package's own SQLite layer: one writer with group
        // commit, readers in parallel (WAL).
        .target(
            name: "ModelSyncServerSQLite",
            dependencies: [
                "ModelSyncCore",
                "ModelSyncJSON",
                "ModelSyncProtocol",
                "ModelSyncServer",
                "ModelSyncSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // Access tokens (JWTs: an HS256 secret, RS256/ES256 keys from a JWKS) and bcrypt password
        // hashes for the server's accounts: a target of its own, so that ModelSyncServer, a
        // JWT-free app and the demo never build jwt-kit and swift-crypto.
        .target(
            name: "ModelSyncServerAuth",
            dependencies: [
                "ModelSyncServer", "ModelSyncCore",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Crypto", package: "swift-crypto"),
                // NIOThreadPool: bcrypt runs there, off the cooperative pool.
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "modelsync-server",
            dependencies: [
                "ModelSyncJSON",
                "ModelSyncServer",
                "ModelSyncServerPostgres",
                "ModelSyncServerSQLite",
                "ModelSyncServerAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The child process of the reliability suite's crash tests (docs/RELIABILITY.md): one
        // scenario per file, chosen by the first argument. Not a product.
        .executableTarget(name: "modelsync-stress-child", dependencies: ["ModelSync"]),
        // Testing: factories, test databases, HTTP record/replay, the server as a fixture.
        .target(name: "ModelSyncTesting", dependencies: ["ModelSync", "ModelSyncServer", "ModelSyncTestingCore"]),
        // What ModelSyncTesting offers that needs no store and no server (SeededGenerator, the
        // reliability suite's switches), re-exported by it: a layer's own tests link only that layer.
        .target(name: "ModelSyncTestingCore"),

        // One test target per module, each importing the module it tests (docs/ARCHITECTURE.md):
        // `swift build --target ModelSyncJSONTests` builds no SQLite, HTTP, NIO or PostgreSQL.
        .testTarget(name: "ModelSyncCoreTests", dependencies: ["TestLoggingStartup", "ModelSyncCore", "ModelSyncJSON"]),
        .testTarget(name: "ModelSyncJSONTests", dependencies: ["TestLoggingStartup", "ModelSyncJSON", "ModelSyncTestingCore"]),
        .testTarget(
            name: "ModelSyncRemoteTests",
            dependencies: [
                "TestLoggingStartup",
                "ModelSyncRemote", "ModelSyncServer", "ModelSyncServerAuth", "ModelSyncTesting", "SessionTestSupport",
                // A raw HTTP peer for what the bundled server never does: stall, redirect in a loop, mislabel.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["Cassettes"]
        ),
        // The server's HTTP behaviour, each case on every backend (ServerTestSupport's `Backend`).
        .testTarget(
            name: "ModelSyncServerTests",
            dependencies: [
                "TestLoggingStartup", "ServerTestSupport",
                "ModelSyncServer", "ModelSyncServerPostgres", "ModelSyncServerSQLite", "ModelSyncServerAuth", "ModelSyncProtocol", "ModelSyncTesting",
                "TestProcesses",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // What only the PostgreSQL backend does: its connections, row security, the change relay,
        // group commits, several server instances over one database.
        .testTarget(
            name: "ModelSyncServerPostgresTests",
            dependencies: [
                "TestLoggingStartup", "ServerTestSupport",
                "ModelSyncServerPostgres", "ModelSyncServer", "ModelSyncProtocol", "ModelSyncTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "ModelSyncServerAuthTests",
            dependencies: [
                "TestLoggingStartup",
                "ModelSyncServerAuth", "ModelSyncServer",
                // jwt-kit signs the tests' tokens (forged ones too); NIOPosix gives bcrypt a pool of its own.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ModelSyncMacrosTests",
            dependencies: [
                "TestLoggingStartup",
                "ModelSyncMacros",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
            ]
        ),
        // The tests' child processes (servers, crash-test children), spawned without Foundation's
        // `Process`, whose exit notifications could go missing (issue #17). Not a product.
        .target(name: "TestProcesses", path: "Tests/Support/TestProcesses"),
        // The test binary logs at warning (MODELSYNC_TEST_LOG_LEVEL for more), set once as it loads:
        // a C constructor calls TestLogging's bootstrap. Every test target links both.
        .target(name: "TestLogging", dependencies: [.product(name: "Logging", package: "swift-log")], path: "Tests/Support/TestLogging"),
        .target(name: "TestLoggingStartup", dependencies: ["TestLogging"], path: "Tests/Support/TestLoggingStartup"),
        // What the AccountSession tests (Remote) and the SyncStore-with-a-session tests (umbrella)
        // share: the server with built-in accounts, revocable tokens, a transport that counts refreshes.
        .target(
            name: "SessionTestSupport",
            dependencies: ["ModelSyncRemote", "ModelSyncServer", "ModelSyncServerAuth", "ModelSyncTesting", "ModelSyncCore"],
            path: "Tests/Support/SessionTestSupport"
        ),
        // The server tests' helpers: requests, the backends a case runs on, test PostgreSQL
        // schemas, `modelsync-server` child processes.
        .target(
            name: "ServerTestSupport",
            dependencies: [
                "ModelSyncServer", "ModelSyncServerPostgres", "ModelSyncServerSQLite", "ModelSyncJSON", "ModelSyncTesting", "TestProcesses",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/Support/ServerTestSupport"
        ),
        // Declares names ModelSync shares with SwiftData, GRDB and Vapor, for NameClashTests.
        .target(name: "NameClashes", dependencies: ["ModelSyncMacros"], path: "Tests/Fixtures/NameClashes"),
        .testTarget(
            name: "ModelSyncTests",
            dependencies: [
                "TestLoggingStartup",
                "ModelSync", "ModelSyncServer", "ModelSyncServerPostgres", "ModelSyncServerSQLite", "ModelSyncServerAuth", "ModelSyncTesting", "NameClashes",
                "TestProcesses", "SessionTestSupport",
                .product(name: "Logging", package: "swift-log"),
                // The sync simulation drops the PostgreSQL schema it made.
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "ModelSyncSQLiteTests",
            // ModelSyncStorage: one column-transform test checks the same transformer in a storage suite.
            dependencies: ["TestLoggingStartup", "ModelSyncSQLite", "ModelSyncStorage", "ModelSyncTesting", "TestProcesses", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "ModelSyncTestingTests", dependencies: ["TestLoggingStartup", "ModelSyncTesting", "ModelSync", "ModelSyncServer"]),
        .testTarget(name: "ModelSyncStorageTests", dependencies: ["TestLoggingStartup", "ModelSyncStorage", "ModelSyncTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
