import Foundation

// A child process for crash tests: the test runs one scenario (one file each) and kills the
// process with SIGKILL at a random moment. Usage: modelsync-stress-child <scenario> <arguments…>
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "sync-writes":
    exit(await SyncWrites.run(Array(arguments.dropFirst())))
default:
    FileHandle.standardError.write(Data("usage: modelsync-stress-child sync-writes <database> <base-url> <first-index>\n".utf8))
    exit(64)
}
