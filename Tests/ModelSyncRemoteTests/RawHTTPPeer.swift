import Foundation
import ModelSync
import NIOCore
import NIOPosix
import Testing

/// One step of what a ``RawHTTPPeer`` does on a connection.
enum RawStep: Sendable {
    /// Writes these bytes.
    case send([UInt8])
    /// Waits, then goes on with the next step.
    case pause(Duration)
    /// Calls this (once the writes before it are done), then goes on: a test's event.
    case run(@Sendable () -> Void)

    /// Writes this text as UTF-8.
    static func text(_ text: String) -> RawStep { .send(Array(text.utf8)) }

    /// A complete response: status line, these headers, `Content-Length`, `Connection: close`
    /// and the body.
    static func response(_ status: String, headers: [String] = [], body: String = "") -> RawStep {
        let head = (["HTTP/1.1 \(status)"] + headers + ["Content-Length: \(body.utf8.count)", "Connection: close"])
            .joined(separator: "\r\n")
        return .text(head + "\r\n\r\n" + body)
    }
}

/// An HTTP peer over loopback that answers each request with a script of raw writes and
/// pauses: what the bundled server never does (stall mid-body, redirect in a loop, mislabel
/// its bodies, answer a create with nothing). It reads only the request head, then runs the
/// script and closes the connection.
struct RawHTTPPeer: Sendable {
    /// `http://127.0.0.1:port`.
    let baseURL: URL
    /// The request heads received, in order.
    let requests = Locked<[String]>([])

    /// Starts a peer whose answer to each request (given its head) is `script`, runs `body`,
    /// and stops the peer.
    static func with<T>(
        _ script: @escaping @Sendable (_ requestHead: String) -> [RawStep],
        _ body: (RawHTTPPeer) async throws -> T
    ) async throws -> T {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = try #require(server.channel.localAddress?.port)
        let peer = RawHTTPPeer(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)")))
        let serving = Task {
            await withDiscardingTaskGroup { group in
                try? await server.executeThenClose { connections in
                    for try await connection in connections {
                        group.addTask { try? await peer.serve(connection, script) }
                    }
                }
                group.cancelAll()
            }
        }
        do {
            let result = try await body(peer)
            await stop(server, serving)
            return result
        } catch {
            await stop(server, serving)
            throw error
        }
    }

    private static func stop(_ server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, _ serving: Task<Void, Never>) async {
        serving.cancel()
        try? await server.channel.close()
        await serving.value
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ script: @Sendable (String) -> [RawStep]) async throws {
        try await connection.executeThenClose { inbound, outbound in
            var head: [UInt8] = []
            for try await chunk in inbound {
                head += chunk.readableBytesView
                if head.count >= 4, head.indices.dropLast(3).contains(where: { head[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) {
                    break
                }
            }
            let text = String(decoding: head, as: UTF8.self)
            requests.withLock { $0.append(text) }
            for step in script(text) {
                switch step {
                case .send(let bytes): try await outbound.write(ByteBuffer(bytes: bytes))
                case .pause(let duration): try await Task.sleep(for: duration)
                case .run(let action): action()
                }
            }
        }
    }
}
