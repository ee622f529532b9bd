import Foundation
import ModelSyncRemote
import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
///
/// Its connections are plain NIO channels with a handler, not `NIOAsyncChannel`s: a server's
/// async channel drops the connections it accepts while it closes, and NIO traps on an async
/// channel dropped before `executeThenClose` ("Deinited NIOAsyncWriter without calling
/// finish()"). A client that connects as the peer stops is simply closed.
struct RawHTTPPeer: Sendable {
    /// `http://127.0.0.1:port`.
    let baseURL: URL
    /// The request heads received, in order.
    let requests = Locked<[String]>([])
    /// The open connections, closed when the peer stops; nil once it has.
    fileprivate let connections = Locked<[ObjectIdentifier: any Channel]?>([:])

    /// Starts a peer whose answer to each request (given its head) is `script`, runs `body`,
    /// and stops the peer.
    static func with<T>(
        _ script: @escaping @Sendable (_ requestHead: String) -> [RawStep],
        _ body: (RawHTTPPeer) async throws -> T
    ) async throws -> T {
        let peer = Locked<RawHTTPPeer?>(nil)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let peer = peer.current else { throw ChannelError.ioOnClosedChannel }
                    try channel.pipeline.syncOperations.addHandler(RawPeerConnection(peer: peer, script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let started = RawHTTPPeer(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)")))
        peer.withLock { $0 = started }
        do {
            let result = try await body(started)
            await started.stop(server)
            return result
        } catch {
            await started.stop(server)
            throw error
        }
    }

    /// Stops accepting, then closes every connection, stalled ones included.
    private func stop(_ server: any Channel) async {
        try? await server.close()
        let open = connections.withLock { connections in
            defer { connections = nil }
            return connections.map { Array($0.values) } ?? []
        }
        for connection in open { try? await connection.close() }
    }
}

/// One connection of a ``RawHTTPPeer``: reads the request head, then runs the script, each step
/// once the one before it is done, and closes.
private final class RawPeerConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let peer: RawHTTPPeer
    private let script: @Sendable (String) -> [RawStep]
    private var head: [UInt8] = []
    private var answering = false
    private var pause: Scheduled<Void>?

    init(peer: RawHTTPPeer, script: @escaping @Sendable (String) -> [RawStep]) {
        (self.peer, self.script) = (peer, script)
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        let isOpen = peer.connections.withLock { connections in
            connections?[ObjectIdentifier(channel)] = channel
            return connections != nil
        }
        // Accepted as the peer stopped: nothing will close it later.
        if !isOpen { context.close(promise: nil) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        pause?.cancel()
        let channel = context.channel
        peer.connections.withLock { _ = $0?.removeValue(forKey: ObjectIdentifier(channel)) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answering else { return }
        head += Self.unwrapInboundIn(data).readableBytesView
        guard head.count >= 4, head.indices.dropLast(3).contains(where: { head[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) else {
            return
        }
        answering = true
        let text = String(decoding: head, as: UTF8.self)
        peer.requests.withLock { $0.append(text) }
        run(script(text)[...], context)
    }

    private func run(_ steps: ArraySlice<RawStep>, _ context: ChannelHandlerContext) {
        guard let step = steps.first else {
            context.close(promise: nil)
            return
        }
        let rest = steps.dropFirst()
        switch step {
        case .send(let bytes):
            context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(bytes: bytes))).assumeIsolated().whenSuccess { self.run(rest, context) }
        case .pause(let duration):
            pause = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) { self.run(rest, context) }
        case .run(let action):
            action()
            run(rest, context)
        }
    }
}

@Suite("RawHTTPPeer")
struct RawHTTPPeerTests {
    /// Connections that arrive as the peer stops, accepted but not yet served, are closed too.
    @Test func aPeerStoppedAsConnectionsArriveClosesEachOfThem() async throws {
        for _ in 0..<5 {
            let sockets = try await RawHTTPPeer.with({ _ in [] }) { peer in
                try (0..<20).map { _ in try Self.openConnection(port: try #require(peer.baseURL.port)) }
            }
            // Each one was closed by the peer, or never accepted: a byte sent makes the kernel
            // answer a connection it dropped with a reset, and a read then sees the end or the
            // reset. The bound on the read only turns a connection left open into a failure
            // instead of a hang; the reads run on a thread of their own, so that one waiting out
            // its bound holds none of the cooperative pool's (two on a two-core machine).
            let reads = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(returning: sockets.map { socket in
                        var bound = timeval(tv_sec: 30, tv_usec: 0)
                        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
                        var byte: UInt8 = 0
                        _ = Self.sendWithoutSignal(socket, &byte)
                        let count = read(socket, &byte, 1)
                        let error = errno
                        close(socket)
                        return (count: count, error: error)
                    })
                }
            }
            for (count, error) in reads {
                #expect(count == 0 || (count < 0 && [ECONNRESET, EPIPE].contains(error)), "read \(count), errno \(error)")
            }
        }
    }

    /// Sends one byte; a connection already reset fails with `EPIPE` instead of raising SIGPIPE.
    private static func sendWithoutSignal(_ socket: Int32, _ byte: inout UInt8) -> Int {
        #if canImport(Glibc)
        return send(socket, &byte, 1, Int32(MSG_NOSIGNAL))
        #else
        var on: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        return send(socket, &byte, 1, 0)
        #endif
    }

    /// A blocking TCP connection to 127.0.0.1:`port`; the kernel completes it before the peer
    /// accepts it.
    private static func openConnection(port: Int) throws -> Int32 {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        try #require(descriptor >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0, "connect: errno \(errno)")
        return descriptor
    }
}
