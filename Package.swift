// swift-tools-version: 6.0
import CompilerPluginSupport
import PackageDescription

// Layers (see docs/ARCHITECTURE.md):
//   ModelSyncCore  ← ModelSyncJSON  ← ModelSync (umbrella, declares the macros)
//   ModelSyncMacros (compiler plugin) is used only through ModelSync.
let package = Package(
    name: "ModelSync",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .macCatalyst(.v16)],
    products: [
        .library(name: "ModelSync", targets: ["ModelSync"]),
        .library(name: "ModelSyncJSON", targets: ["ModelSyncJSON"]),
        .executable(name: "modelsync-demo", targets: ["modelsync-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
    ],
    targets: [
        // Core: the Model protocol, schemas and field types. No dependencies.
        .target(name: "ModelSyncCore"),
        // JSON: a tape-based reader, a writer, and the runtime the generated codecs call.
        .target(name: "ModelSyncJSON", dependencies: ["ModelSyncCore"]),
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
        // Umbrella: re-exports the layers and declares the macros.
        .target(name: "ModelSync", dependencies: ["ModelSyncCore", "ModelSyncJSON", "ModelSyncMacros"]),
        .executableTarget(name: "modelsync-demo", dependencies: ["ModelSync"]),

        .testTarget(name: "ModelSyncJSONTests", dependencies: ["ModelSyncJSON"]),
        .testTarget(
            name: "ModelSyncMacrosTests",
            dependencies: [
                "ModelSyncMacros",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(name: "ModelSyncTests", dependencies: ["ModelSync"]),
    ],
    swiftLanguageModes: [.v6]
)
