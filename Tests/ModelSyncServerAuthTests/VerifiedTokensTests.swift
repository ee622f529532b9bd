@testable import ModelSyncServerAuth
import ModelSyncServer
import Testing

/// Verified tokens are remembered until they expire, by their exact text, within a bound.
@Suite struct VerifiedTokensTests {
    @Test func aTokenIsRememberedUntilItExpires() {
        let tokens = VerifiedTokens()
        let ann = Caller(userID: "1", role: "editor")
        tokens.remember("a.b.c", ann, validUntil: 100, now: 10)
        #expect(tokens.caller(for: "a.b.c", now: 99) == ann)
        #expect(tokens.caller(for: "a.b.C", now: 50) == nil)
        // Swift calls these equal (KELVIN SIGN decomposes to K); their bytes differ.
        tokens.remember("a.K.c", ann, validUntil: 100, now: 10)
        #expect("a.\u{212A}.c" == "a.K.c")
        #expect(tokens.caller(for: "a.\u{212A}.c", now: 50) == nil)
        #expect(tokens.caller(for: "a.b.c", now: 100) == nil)
        // Gone once seen expired, even if asked about an earlier time.
        #expect(tokens.caller(for: "a.b.c", now: 50) == nil)
    }

    @Test func whenFullTheExpiredGoFirstThenAll() {
        let tokens = VerifiedTokens()
        let caller = Caller(userID: "1")
        for index in 0..<VerifiedTokens.capacity {
            tokens.remember("t\(index)", caller, validUntil: index == 0 ? 5 : 1_000, now: 0)
        }
        tokens.remember("new", caller, validUntil: 1_000, now: 10)
        #expect(tokens.caller(for: "t0", now: 1) == nil && tokens.caller(for: "t1", now: 10) == caller && tokens.caller(for: "new", now: 10) == caller)
        tokens.remember("newer", caller, validUntil: 1_000, now: 10)
        #expect(tokens.caller(for: "t1", now: 10) == nil && tokens.caller(for: "newer", now: 10) == caller)
    }
}
