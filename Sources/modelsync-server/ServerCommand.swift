import ArgumentParser
import Foundation
import ModelSyncServer

/// `modelsync-server db.json --port 3000`: a json-server-compatible REST server over a file.
@main
struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelsync-server",
        abstract: "A json-server-compatible REST server over a JSON file.",
        discussion: """
            Every top-level array in the file is a collection (GET/POST /posts, GET/PUT/PATCH/DELETE \
            /posts/1, /posts/1/comments), every top-level object a singular resource. Writes are \
            saved back to the file atomically.
            """
    )

    @Argument(help: "The JSON file to serve.")
    var file: String

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 3000

    @Flag(help: "Answer every write with 405 and never change the file.")
    var readOnly = false

    @Option(help: "Wait this many milliseconds before every answer.")
    var delay = 0

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodySize = 1 << 20

    @Option(help: "Close a connection that sends and receives nothing for this many seconds (0: never).")
    var idleTimeout = 30

    @Option(help: "The most connections open at once (0: no limit).")
    var maxConnections = 512

    @Option(help: "Answer a share of requests (0–1) with --fail-status, for testing clients.")
    var failRate = 0.0

    @Option(help: "The status answered by --fail-rate.")
    var failStatus = 503

    @Option(help: "Drop the connection on a share of requests (0–1), for testing clients.")
    var dropRate = 0.0

    @Option(help: "Keep deletions in the change feed for this many seconds; older cursors must resync (410).")
    var tombstoneRetention = 7 * 24 * 60 * 60

    @Option(help: "Keep at most this many deletions in the change feed.")
    var tombstoneCapacity = 100_000

    func validate() throws {
        guard (0...1).contains(failRate), (0...1).contains(dropRate) else {
            throw ValidationError("--fail-rate and --drop-rate must be between 0 and 1")
        }
        guard idleTimeout >= 0, maxConnections >= 0 else {
            throw ValidationError("--idle-timeout and --max-connections must not be negative")
        }
        guard tombstoneRetention >= 0, tombstoneCapacity >= 0 else {
            throw ValidationError("--tombstone-retention and --tombstone-capacity must not be negative")
        }
        guard delay >= 0, maxBodySize > 0, (0...65535).contains(port), (100...599).contains(failStatus) else {
            throw ValidationError("--delay, --max-body-size, --port and --fail-status must be in range")
        }
    }

    func run() async throws {
        let options = ServerOptions(
            readOnly: readOnly, delay: .milliseconds(delay), maxBodySize: maxBodySize,
            idleTimeout: idleTimeout > 0 ? .seconds(idleTimeout) : nil,
            maxConnections: maxConnections > 0 ? maxConnections : nil,
            feedLimits: FeedLimits(tombstoneRetention: TimeInterval(tombstoneRetention), tombstoneCapacity: tombstoneCapacity)
        )
        let server = try await ModelSyncServer.start(
            file: URL(fileURLWithPath: file), host: host, port: port, options: options,
            stopsOnSignals: true
        )
        if failRate > 0 { server.inject(Fault(.status(failStatus), fraction: failRate)) }
        if dropRate > 0 { server.inject(Fault(.dropConnection, fraction: dropRate)) }
        let resources = (try await server.data).objectValue?.keys ?? []
        print("modelsync-server: serving \(file) at \(server.baseURL)\(readOnly ? " (read-only)" : "")")
        for name in resources { print("  \(server.baseURL)/\(name)") }
        print("Press Ctrl-C to stop.")
        // A supervising process reads the address from a pipe, where stdout is block-buffered.
        fflush(nil)
        await server.waitUntilStopped()
    }
}
