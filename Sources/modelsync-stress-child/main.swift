import Foundation

// A child process for the reliability suite's crash tests (docs/RELIABILITY.md): the tests
// start it, let it write, and kill it with SIGKILL at random moments. The first argument
// names the scenario, one per file; each reports its progress on stdout, one line per event.

let arguments = Array(CommandLine.arguments.dropFirst())

/// Writes `line` and a newline to stdout at once, unbuffered: a line the parent reads was
/// written before the kill.
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Ends the process with a message on stderr (bad arguments, a failure to report).
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("modelsync-stress-child: " + message + "\n").utf8))
    exit(2)
}

switch arguments.first {
case "batch-saves":
    BatchSaves.run(Array(arguments.dropFirst()))
case "sync-writes":
    exit(await SyncWrites.run(Array(arguments.dropFirst())))
default:
    fail("usage: modelsync-stress-child <scenario> [arguments]; scenarios: batch-saves, sync-writes")
}
