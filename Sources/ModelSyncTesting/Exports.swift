// The parts that need no store and no server (SeededGenerator, the reliability suite's switches)
// live in ModelSyncTestingCore, so that a layer's own tests link only that layer; importing
// ModelSyncTesting still brings them.
@_exported import ModelSyncTestingCore
