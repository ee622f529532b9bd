import Foundation
@testable import ModelSyncRemote
import Testing

@Suite struct ServerSentEventsTests {
    static let stream = Array("""
        : keep-alive

        id: 1
        event: change
        data: {"seq": 1}

        data: first line\r\ndata: second line\r\n\r\nid: 3\rdata:no space\r\r
        """.utf8) + Array("\n".utf8)

    @Test func parsesEventsWhateverTheChunks() {
        var whole = ServerSentEventParser()
        let expected = whole.feed(Self.stream)
        #expect(expected == [
            ServerSentEvent(id: "1", event: "change", data: #"{"seq": 1}"#),
            ServerSentEvent(id: "1", event: "message", data: "first line\nsecond line"),
            ServerSentEvent(id: "3", event: "message", data: "no space"),
        ])
        // Every split into two chunks gives the same events (CRLF split across chunks included).
        for cut in 0...Self.stream.count {
            var parser = ServerSentEventParser()
            let events = parser.feed(Self.stream[..<cut]) + parser.feed(Self.stream[cut...])
            #expect(events == expected, "cut at \(cut)")
        }
    }

    @Test func hostileLinesAreBoundedAndNULIdsIgnored() {
        var parser = ServerSentEventParser()
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: ServerSentEventParser.maximumLineLength * 2)
        let events = parser.feed(Array("data: ".utf8) + long + Array("\nid: a\u{0}b\n\n".utf8))
        #expect(events.count == 1)
        #expect(events.first?.data.utf8.count == ServerSentEventParser.maximumLineLength - "data: ".utf8.count)
        #expect(events.first?.id == nil)
    }
}
