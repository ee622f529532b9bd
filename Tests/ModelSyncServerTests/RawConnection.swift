import Foundation
import NIOCore
import NIOPosix

/// A plain TCP connection over loopback, for requests an HTTP client will not send (a head that
/// never ends, a body sent while the answer is read).
struct RawConnection {
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>

    static func open(port: Int) async throws -> RawConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return RawConnection(channel: channel)
    }

    /// Closes the connection (a watchdog's way to end an ``exchange(head:body:)`` that waits).
    func close() async {
        try? await channel.channel.close()
    }

    /// Sends `head`, then `body` in chunks while reading; returns everything the server sent once
    /// it closed the connection (the event the tests wait for).
    func exchange(head: String, body: [UInt8] = []) async throws -> String {
        try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask {
                    do {
                        try await outbound.write(ByteBuffer(string: head))
                        var offset = 0
                        while offset < body.count {
                            let end = min(offset + 64 * 1024, body.count)
                            try await outbound.write(ByteBuffer(bytes: body[offset..<end]))
                            offset = end
                        }
                    } catch ChannelError.ioOnClosedChannel {
                        // The server closed first (what several tests wait for); the reader
                        // returns what arrived.
                    } catch let error as IOError where [EPIPE, ECONNRESET].contains(error.errnoCode) {
                        // The same, seen by the socket.
                    }
                    return nil
                }
                group.addTask {
                    var received: [UInt8] = []
                    do {
                        for try await chunk in inbound { received += chunk.readableBytesView }
                    } catch let error as IOError where error.errnoCode == ECONNRESET {
                        // A reset is the server closing too (it may close with bytes unread).
                    } catch ChannelError.ioOnClosedChannel {
                        // Closed before reading began: the server closed it.
                    }
                    return received
                }
                var received: [UInt8] = []
                for try await result in group { if let result { received = result } }
                return String(decoding: received, as: UTF8.self)
            }
        }
    }
}
