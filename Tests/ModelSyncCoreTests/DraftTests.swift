import Foundation
import ModelSyncCore
import ModelSyncJSON
import Testing

/// Not `Equatable`: a field of this type counts as changed whenever it is set.
@Model
struct Byline {
    var name: String
}

@Model
struct Memo {
    var id: Int?
    var title: String
    @JSON("body") var text: String = ""
    @JSON("meta.pinned") var pinned: Bool = false
    var dueAt: Date?
    var byline: Byline?
    @Ignored var isSelected = false
}

extension Memo: Validatable {
    static let validator = Validator<Memo> {
        Validate(\.title, .required("Enter a title"), .length(...20))
        Validate(\.text, .length(...10))
    }
}

/// Collects the changes a draft reports to a handler.
final class ChangeLog: @unchecked Sendable {
    // @unchecked: `changes` is only touched under `lock`.
    private let lock = NSLock()
    private var changes: [FieldChange] = []

    func record(_ change: FieldChange) {
        lock.withLock { changes.append(change) }
    }

    var first: FieldChange? { lock.withLock { changes.first } }
    var all: [String] { lock.withLock { changes.map(\.description) } }
}

@Suite struct DraftTests {
    let loaded = Memo(id: 1, title: "Groceries", text: "Milk")

    @Test func aNewModelStartsEmptyAndALoadedOneClean() {
        let new = Draft(new: Memo(title: ""))
        #expect(new.state == .empty)
        #expect(new.changes.isEmpty)
        #expect(!new.isDirty)
        let editing = Draft(editing: loaded)
        #expect(editing.state == .clean)
        #expect(editing.title == "Groceries")
        #expect(editing.id == 1)
    }

    @Test func changesMakeItDirtyWithOldAndNewValues() {
        var draft = Draft(editing: loaded)
        draft.title = "Errands"
        draft.pinned = true
        #expect(draft.state == .dirty)
        #expect(draft.isDirty)
        #expect(draft.changedFields == ["title", "pinned"])
        #expect(draft.changedJSONKeys == ["title", "meta.pinned"])
        #expect(draft.changes.map(\.description) == [#"title: "Groceries" → "Errands""#, "pinned: false → true"])
        #expect(draft.changes.first?.oldValue as? String == "Groceries")
        #expect(draft.changes.first?.newValue as? String == "Errands")
    }

    @Test func changingBackToTheBaselineIsNotDirty() {
        var draft = Draft(editing: loaded)
        draft.title = "Errands"
        draft.title = "Groceries"
        #expect(draft.state == .clean)
        #expect(draft.changes.isEmpty)
        var new = Draft(new: Memo(title: ""))
        new.title = "x"
        #expect(new.state == .dirty)
        new.title = ""
        #expect(new.state == .empty)
    }

    @Test func settingTheSameValueChangesNothing() {
        var draft = Draft(editing: loaded)
        let log = ChangeLog()
        draft.onChange(log.record)
        draft.title = "Groceries"
        #expect(draft.state == .clean)
        #expect(log.all.isEmpty)
    }

    @Test func nonEquatableFieldsCountAsChangedWhenSet() {
        var draft = Draft(editing: loaded)
        draft.byline = nil
        #expect(draft.state == .dirty)
        #expect(draft.changedFields == ["byline"])
        #expect(draft.changes.first?.description == "byline: nil → nil")
    }

    @Test func ignoredPropertiesAreReportedButNeverDirty() {
        var draft = Draft(editing: loaded)
        let log = ChangeLog()
        draft.onChange(log.record)
        draft.isSelected = true
        #expect(draft.isSelected)
        #expect(draft.state == .clean)
        #expect(log.all == ["isSelected: false → true"])
    }

    @Test func validValuesBecomeTheNewBaseline() throws {
        var draft = Draft(editing: loaded)
        draft.title = "Errands"
        let valid = draft.validate()
        #expect(valid)
        #expect(draft.state == .clean)
        #expect(draft.changes.isEmpty)
        #expect(draft.validationError == nil)
        draft.title = "Chores"
        #expect(draft.changes.map(\.description) == [#"title: "Errands" → "Chores""#])
        draft.undo()
        #expect(draft.title == "Errands", "undo returns to the last clean state")
        #expect(draft.state == .clean)
    }

    @Test func invalidValuesListErrorsByField() {
        var draft = Draft(editing: loaded)
        draft.title = " "
        draft.text = "Far too long a text"
        let valid = draft.validate()
        #expect(!valid)
        #expect(draft.state == .invalid)
        #expect(draft.errors(for: \.title) == ["Enter a title"])
        #expect(draft.errors(for: \.text) == ["length must be at most 10"])
        #expect(draft.errors(for: \.pinned) == [])
        #expect(draft.validationError?.fields == ["title", "text"])
        #expect(draft.changedFields == ["title", "text"], "an invalid draft keeps its baseline")
        let error = #expect(throws: ValidationError.self) { try draft.commit() }
        #expect(error?.failures.count == 2)
    }

    @Test func editingAnInvalidDraftMakesItDirty() {
        var draft = Draft(editing: loaded)
        draft.title = ""
        draft.validate()
        draft.title = "Errands"
        #expect(draft.state == .dirty)
        #expect(draft.validationError == nil)
        #expect(draft.errors(for: \.title).isEmpty)
    }

    @Test func undoFromInvalidReturnsToTheLastCleanState() {
        var draft = Draft(editing: loaded)
        draft.title = ""
        draft.pinned = true
        draft.validate()
        draft.undo()
        #expect(draft.state == .clean)
        #expect(draft.title == "Groceries")
        #expect(!draft.pinned)
        #expect(draft.validationError == nil)
    }

    @Test func aNewModelValidatesToCleanOrInvalidAndUndoesToEmpty() {
        var draft = Draft(new: Memo(title: ""))
        let validAtFirst = draft.validate()
        #expect(!validAtFirst)
        #expect(draft.state == .invalid)
        draft.title = "Errands"
        #expect(draft.state == .dirty)
        draft.undo()
        #expect(draft.state == .empty)
        #expect(draft.title == "")
        draft.title = "Errands"
        let valid = draft.validate()
        #expect(valid)
        #expect(draft.state == .clean)
        draft.title = "Chores"
        draft.undo()
        #expect(draft.state == .clean)
        #expect(draft.title == "Errands")
    }

    @Test func theCallersCopyIsUntouched() throws {
        var memo = loaded
        var draft = Draft(editing: memo)
        draft.title = "Errands"
        draft.dueAt = Date(timeIntervalSince1970: 0)
        #expect(memo.title == "Groceries")
        #expect(memo.dueAt == nil)
        var copy = draft
        copy.title = "Chores"
        #expect(draft.title == "Errands", "drafts are values")
        memo = try draft.commit()
        #expect(memo.title == "Errands")
        #expect(memo.dueAt == Date(timeIntervalSince1970: 0))
        #expect(draft.model.title == "Errands")
    }

    @Test func theStreamReportsEveryChangeIncludingUndo() async {
        var draft = Draft(editing: loaded)
        let stream = draft.observeChanges()
        draft.title = "Errands"
        draft.text = "Eggs"
        draft.title = "Errands"   // no change
        draft.undo()
        draft = Draft(editing: loaded)   // the last copy of the first draft is gone: the stream ends
        var seen: [String] = []
        for await change in stream { seen.append(change.description) }
        #expect(seen == [
            #"title: "Groceries" → "Errands""#,
            #"text: "Milk" → "Eggs""#,
            #"title: "Errands" → "Groceries""#,
            #"text: "Eggs" → "Milk""#,
        ])
        #expect(draft.state == .clean)
    }

    @Test func changesCarryTheFieldAndJSONKey() {
        var draft = Draft(editing: loaded)
        let log = ChangeLog()
        draft.onChange(log.record)
        draft.pinned = true
        let change = log.first
        #expect(change?.field == "pinned")
        #expect(change?.jsonKey == "meta.pinned")
        #expect(change?.oldValue as? Bool == false)
        #expect(change?.newValue as? Bool == true)
    }

    @Test func draftsAreSendable() async {
        var draft = Draft(editing: loaded)
        draft.title = "Errands"
        let sent = draft
        let title = await Task.detached { sent.title }.value
        #expect(title == "Errands")
    }

    @Test func patchBodiesHoldExactlyTheChangedFields() throws {
        var draft = Draft(editing: loaded)
        #expect(text(try draft.patchBody()) == "{}")
        draft.text = "Eggs"
        #expect(text(try draft.patchBody()) == #"{"body":"Eggs"}"#)
        draft.pinned = true
        draft.dueAt = Date(timeIntervalSince1970: 0)
        #expect(text(try draft.patchBody()) == #"{"body":"Eggs","meta":{"pinned":true},"dueAt":"1970-01-01T00:00:00Z"}"#)
        draft.dueAt = nil
        draft.title = "Errands"
        #expect(text(try draft.patchBody(at: "data")) == #"{"data":{"title":"Errands","body":"Eggs","meta":{"pinned":true}}}"#)
        draft.validate()
        #expect(text(try draft.patchBody()) == "{}")
    }

    @Test func aClearedFieldIsSentAsNull() throws {
        var memo = loaded
        memo.dueAt = Date(timeIntervalSince1970: 0)
        var draft = Draft(editing: memo)
        draft.dueAt = nil
        let encoder = JSONModelEncoder(options: JSONEncodingOptions(nilEncoding: .omit))
        #expect(text(try draft.patchBody(encoder: encoder)) == #"{"dueAt":null}"#)
    }

    @Test func partialEncodingFollowsKeyStrategiesAndExclusions() throws {
        let snake = JSONModelEncoder(options: JSONEncodingOptions(keyStrategy: .snakeCase))
        let memo = Memo(id: 1, title: "A", dueAt: Date(timeIntervalSince1970: 0))
        #expect(text(try snake.encode(memo, fields: ["dueAt", "id"])) == #"{"due_at":"1970-01-01T00:00:00Z","id":1}"#)
        let account = Credential(id: 1, createdAt: Date(timeIntervalSince1970: 0), password: "secret")
        #expect(text(try JSONModelEncoder().encode(account, fields: ["password", "createdAt"])) == #"{"createdAt":0}"#)
        #expect(throws: JSONError.self) { try JSONModelEncoder().encode(memo, fields: ["nope"]) }
    }
}

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Dates as seconds, a field never encoded.
@Model(dates: .secondsSince1970, encodeExcluding: ["password"])
struct Credential {
    var id: Int
    var createdAt: Date
    var password: String?
}
