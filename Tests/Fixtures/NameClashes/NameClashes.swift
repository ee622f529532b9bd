// Stands in for the modules whose names ModelSync shares: SwiftData's `@Model` macro, GRDB's
// `Database`, Vapor's `Validatable` and `Validator`. The test that imports it and ModelSync
// together spells ModelSync's by module (Tests/ModelSyncTests/NameClashTests.swift).

/// Another module's `@Model`: a peer macro that adds nothing.
@attached(peer)
public macro Model() = #externalMacro(module: "ModelSyncMacros", type: "IgnoredMacro")

/// Another module's `Database`.
public final class Database: Sendable {
    public init() {}
}

/// Another module's `Validatable`.
public protocol Validatable {
    func validate() throws
}

/// Another module's `Validator`.
public struct Validator: Sendable {
    public init() {}
}
