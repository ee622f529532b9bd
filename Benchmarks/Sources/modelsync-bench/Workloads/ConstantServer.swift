import Foundation
import Hummingbird
import Logging
import ModelSync

/// `modelsync-bench --serve-constant`: the HTTP layer's ceiling for the wrk rows
/// (`constant_route`). A Hummingbird application configured as `modelsync-server` configures
/// its own (HTTP/1.1, the same server name, no middleware), whose routes answer what the
/// server would for the rows' requests, computed once: no backend, no JSON work per request.
/// What a server row loses against it is the server's own work (routing into the backend, the
/// query, JSON), not Hummingbird's and NIO's.
enum ConstantServe {
    static func run() async throws {
        let data = ServerFleet.data()
        let posts = data["posts"]?.arrayValue ?? []
        let one = ByteBuffer(bytes: (posts.first ?? [:]).jsonBytes())
        let filtered = ByteBuffer(bytes: JSONValue.array(posts.filter { $0["userId"] == 1 }).jsonBytes())
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.eTag] = "\"1\""
        let answer = headers

        let router = Router()
        router.get("posts/:id") { _, _ in Response(status: .ok, headers: answer, body: .init(byteBuffer: one)) }
        router.get("posts") { _, _ in Response(status: .ok, headers: answer, body: .init(byteBuffer: filtered)) }
        router.post("posts") { request, _ in
            // The body is read, as a server must, then dropped.
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: .created, headers: answer, body: .init(byteBuffer: one))
        }
        router.patch("posts/:id") { request, _ in
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: .ok, headers: answer, body: .init(byteBuffer: one))
        }
        router.delete("posts/:id") { _, _ in Response(status: .ok) }

        var logger = Logger(label: "modelsync-bench.constant")
        logger.logLevel = .error
        let application = Application(
            router: router,
            server: .http1(),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "modelsync-server"),
            onServerRunning: { channel in
                print("serving at http://127.0.0.1:\(channel.localAddress?.port ?? 0)")
                fflush(nil)
            },
            logger: logger
        )
        try await application.runService(gracefulShutdownSignals: [.sigterm, .sigint])
    }
}
