import Foundation
import ModelSyncStorage

@Model
struct Note: Equatable {
    var id: Int
    var text: String
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storage-consumer-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }
let suite = try StorageSuite(name: "notes", in: directory)
let note = Note(id: 1, text: "Hello")
try suite.save(note)
let read = try suite.fetch(Note.self, id: 1)
precondition(read == note, "the note read back differs")
let keys = try suite.keys()
print("StorageConsumer: saved and read back \(keys)")
