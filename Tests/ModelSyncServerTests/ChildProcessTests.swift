import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
@Suite("ChildProcess")
struct ChildProcessTests {
    /// A socket the test process holds (NIO accepts connections without close-on-exec on Linux)
    /// is not open in a child: otherwise a connection closed here stayed open there.
    @Test func aChildInheritsNoSocketOfTheTests() async throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket >= 0)
        defer { close(socket) }
        let child = try ChildProcess(URL(fileURLWithPath: "/bin/ls"), arguments: ["/proc/self/fd"])
        var descriptors: [String] = []
        for await line in child.lines() { descriptors.append(line) }
        #expect(await child.exitStatus == 0)
        // 0–2, and the directory `ls` reads.
        #expect(descriptors.count == 4, "\(descriptors)")
        #expect(!descriptors.contains(String(socket)))
    }
}
#endif
