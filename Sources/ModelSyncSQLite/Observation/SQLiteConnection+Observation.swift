extension SQLiteConnection {
    /// Starts collecting the tables each transaction changes (the writer connection of a
    /// ``Database``, once something observes it).
    func trackChanges() {
        guard changeTracker == nil else { return }
        let tracker = ChangeTracker()
        tracker.install(on: handle)
        changeTracker = tracker
    }

    /// The tables changed by the transactions committed since the last call.
    func takeCommittedChanges() -> Set<String> {
        changeTracker?.takeCommitted() ?? []
    }

    /// Runs `body` and returns its result with the tables read by the statements it ran through
    /// this connection (`withStatement`, ActiveRecord, `rows`, `scalar`, `executeScript`).
    /// Statements run through ``handle`` directly are not seen.
    func recordingReadTables<T>(_ body: () throws -> T) rethrows -> (T, Set<String>) {
        let outer = readTableRecorder
        readTableRecorder = []
        let result: T
        do {
            result = try body()
        } catch {
            readTableRecorder = outer
            throw error
        }
        let tables = readTableRecorder ?? []
        // A recording around this one sees these tables too.
        readTableRecorder = outer.map { $0.union(tables) }
        return (result, tables)
    }
}
