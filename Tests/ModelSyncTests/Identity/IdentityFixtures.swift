import Foundation
import ModelSync

@Model
struct Author: Equatable {
    var id: Int
    var name: String
    var bio: String?
    var karma: Int = 0
}

@Model(table: "stories")
struct Story: Equatable {
    var id: Int
    var title: String
    @Column(unique: true) var slug: String = ""
    var author: Author?
}

extension Story: RemoteResource {
    static let remote = RemoteConfiguration(path: "stories")
}

/// A model whose nested author may arrive as an object or as a bare id.
@Model
struct Citation: Equatable {
    var id: Int
    var author: Reference<Author>
}

/// A model whose key is nil until it is saved.
@Model
struct Unsaved {
    var id: Int?
    var text: String
}

/// A directory under the system's temporary directory, removed when the value is gone.
final class ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A decoder that decodes through `map`.
func decoder(_ map: IdentityMap, mode: JSONDecodingMode = .lenient) -> JSONModelDecoder {
    JSONModelDecoder(options: JSONDecodingOptions(mode: mode, identityMap: map))
}
