// swift-tools-version: 6.2
import PackageDescription

// ModelSync's benchmarks: a package of their own, so that ModelSync's users never build the
// peers it is compared with (Foundation's JSON coders today; GRDB, raw SQLite C and raw
// AsyncHTTPClient later).
//
//     swift run -c release --package-path Benchmarks modelsync-bench [workloads...] [--quick]
//
// See README.md in this directory.
let package = Package(
    name: "ModelSyncBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "ModelSync", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The constant route of the wrk rows (the HTTP layer's ceiling): the server's own version.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // The scale-out workloads sample pg_stat_activity on a connection of their own.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .executableTarget(
            name: "modelsync-bench",
            dependencies: [
                .product(name: "ModelSync", package: "ModelSync"),
                .product(name: "ModelSyncServer", package: "ModelSync"),
                .product(name: "ModelSyncServerPostgres", package: "ModelSync"),
                .product(name: "ModelSyncServerSQLite", package: "ModelSync"),
                .product(name: "ModelSyncServerAuth", package: "ModelSync"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
