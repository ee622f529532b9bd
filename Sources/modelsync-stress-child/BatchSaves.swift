import Foundation
import ModelSync

/// One row of a batch: every batch has the same number of rows, so a partial batch shows.
@Model(table: "batch_rows")
struct BatchRow: SQLModel {
    var id: Int?
    var batch: Int
    var position: Int
    var payload: String
}

/// `batch-saves <database path> <rows per batch>`: saves batches of rows with `saveAll`, one
/// transaction each, forever, numbering them on from the last batch in the file, and prints
/// `committed <batch>` after each commit. Killed at any moment, the file must hold whole
/// batches only, and every batch reported.
enum BatchSaves {
    static func run(_ arguments: [String]) {
        guard arguments.count == 2, let size = Int(arguments[1]), size > 0 else {
            fail("usage: batch-saves <database path> <rows per batch>")
        }
        do {
            let db = try Database(path: arguments[0], models: [BatchRow.self])
            let last = try db.read { try $0.scalar("SELECT max(batch) FROM batch_rows")?.integerValue } ?? -1
            var batch = Int(last) + 1
            // Sizeable rows, so that a batch spans many pages and a kill lands mid-write.
            let payload = String(repeating: "x", count: 512)
            report("ready \(batch)")
            while true {
                var rows = (0..<size).map { BatchRow(batch: batch, position: $0, payload: payload) }
                try db.write { try BatchRow.saveAll(&rows, $0) }
                report("committed \(batch)")
                batch += 1
            }
        } catch {
            fail("\(error)")
        }
    }
}
