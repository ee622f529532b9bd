import Foundation
import ModelSync
import ModelSyncTesting

@Model
struct Author: SQLModel, Equatable {
    var id: Int
    var name: String
    var bio: String?
    var karma: Int = 0
}

@Model(table: "stories")
struct Story: SQLModel, Equatable {
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
struct Citation: SQLModel, Equatable {
    var id: Int
    var author: Reference<Author>
}

/// A model whose key is nil until it is saved.
@Model
struct Unsaved: SQLModel {
    var id: Int?
    var text: String
}

/// A model with a date that has a fraction of a second.
@Model
struct Checkin: SQLModel, Equatable {
    var id: Int
    var at: Date
}

/// The toolkit's temporary directory, removed when the value is gone.
typealias ScratchDirectory = TemporaryDirectory

extension TemporaryDirectory {
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// A decoder that decodes through `map`.
func decoder(_ map: IdentityMap, mode: JSONDecodingMode = .lenient) -> JSONModelDecoder {
    JSONModelDecoder(options: JSONDecodingOptions(mode: mode, identityMap: map))
}
