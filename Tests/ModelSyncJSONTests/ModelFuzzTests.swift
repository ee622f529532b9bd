import Foundation
import ModelSyncJSON
import ModelSyncTestingCore
import Testing

/// Random and mutated documents fed to model decoding: each one decodes or throws a
/// `JSONError`, never crashes, never hangs. 2,000 documents by default, 1,000,000 in stress
/// mode (`MODELSYNC_STRESS=1`); an explicit `MODELSYNC_FUZZ_ITERATIONS` wins over both.
@Suite struct ModelFuzzTests {
    static let iterations =
        ProcessInfo.processInfo.environment["MODELSYNC_FUZZ_ITERATIONS"].flatMap(Int.init) ?? StressMode.count(2_000, stress: 1_000_000)

    static let seeds: [String] = [
        #"{"id": 1, "userId": 7, "title": "Hello", "body": "World", "publishedAt": 1700000000123, "tags": ["a", "b"], "author": {"id": 2, "name": "Ann", "role": "admin", "is_active": true}, "rating": 4.5}"#,
        #"[{"id": 1, "name": "Ann"}, {"id": "2", "name": 3, "email_address": null}]"#,
        #"{"name": "root", "children": [{"name": "a", "children": [{"name": "b"}]}]}"#,
    ]

    static let fragments: [String] = ["{", "}", "[", "]", ",", ":", "\"", "null", "true", "1e999", "-", "\\u00", "\"id\"", "{\"id\":", "0.5", "\u{0}", "é"]

    @Test func mutatedDocumentsDecodeOrThrowTypedErrors() {
        var random = SeededGenerator(seed: 42)
        let decoders = [JSONModelDecoder(), JSONModelDecoder(mode: .strict),
                        JSONModelDecoder(options: JSONDecodingOptions(dropsInvalidElements: true))]
        var decoded = 0
        for iteration in 0..<Self.iterations {
            var bytes = Array(Self.seeds[iteration % Self.seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                mutate(&bytes, &random)
            }
            for decoder in decoders {
                decoded += attempt { try decoder.decode(Post.self, from: bytes) }
                decoded += attempt { try decoder.decode([User].self, from: bytes) }
                decoded += attempt { try decoder.decode(TreeNode.self, from: bytes) }
            }
        }
        // Some mutations leave valid documents: the run exercised both outcomes.
        #expect(decoded > 0)
    }

    private func attempt<T>(_ body: () throws -> T) -> Int {
        do {
            _ = try body()
            return 1
        } catch is JSONError {
            return 0
        } catch {
            Issue.record("unexpected error type: \(error)")
            return 0
        }
    }

    private func mutate(_ bytes: inout [UInt8], _ random: inout SeededGenerator) {
        guard !bytes.isEmpty else {
            bytes = Array("{}".utf8)
            return
        }
        let position = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
        case 1: bytes.remove(at: position)
        case 2: bytes.insert(contentsOf: Array(Self.fragments.randomElement(using: &random)?.utf8 ?? "x".utf8), at: position)
        case 3: bytes.removeSubrange(position...)
        default:
            // Swap a value for another type: digits ⇄ strings ⇄ structures.
            let replacement = ["\"7\"", "7", "[]", "{}", "null", "true", "-0.0", "\"\""].randomElement(using: &random) ?? "0"
            let end = min(bytes.count, position + Int.random(in: 1...6, using: &random))
            bytes.replaceSubrange(position..<end, with: Array(replacement.utf8))
        }
    }
}
