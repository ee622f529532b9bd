// swift-tools-version: 6.2
// A consumer of the ModelSyncServer product alone (a JSON-file server) (see ../README.md): it must build with nothing else.
import Foundation
import PackageDescription

// A path dependency is named after its directory, whatever the checkout is called.
let modelSync = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized

let package = Package(
    name: "ServerConsumer",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    dependencies: [.package(path: modelSync.path)],
    targets: [
        .executableTarget(
            name: "ServerConsumer",
            dependencies: [.product(name: "ModelSyncServer", package: modelSync.lastPathComponent)]
        )
    ],
    swiftLanguageModes: [.v6]
)
