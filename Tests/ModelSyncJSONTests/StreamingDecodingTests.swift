import Foundation
import Testing
@testable import ModelSyncJSON

/// `forEachElement` and `elements(_:contentsOf:)`: the elements of a root array, in memory or
/// from a file read in chunks, with typed errors located in the file.
@Suite("Streaming decoding of root arrays")
struct StreamingDecodingTests {
    /// A file in the temporary directory, removed at the end of the test.
    final class TemporaryFile {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-stream-\(UUID().uuidString).json")

        init(_ bytes: [UInt8]) throws { try Data(bytes).write(to: url) }
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// The elements of `bytes` from a file read in chunks of `chunkSize`.
    static func fromFile<T: JSONDecodable>(
        _ type: T.Type, _ bytes: [UInt8], chunkSize: Int, options: JSONDecodingOptions = JSONDecodingOptions()
    ) throws -> [T] {
        let file = try TemporaryFile(bytes)
        let reader = try JSONFileElementReader(url: file.url, maxDepth: options.maxDepth, chunkSize: chunkSize)
        let decoder = JSONModelDecoder(options: options)
        guard try reader.open(), let first = reader.reader else { return try decoder.decode([T].self, from: bytes) }
        var context = JSONDecodingContext(tape: first.emptyTape, options: options)
        var elements: [T] = []
        while try reader.next() {
            guard let current = reader.reader else { break }
            do {
                if let element = try decoder.decodeElement(type, current, &context) { elements.append(element) }
            } catch var error as JSONError {
                reader.relocate(&error)
                throw error
            }
        }
        return elements
    }

    /// Every way of streaming gives what decoding `[T]` whole gives, or its error (for syntax
    /// errors, the same offset, line and column), whatever the chunk size.
    func expectSameAsWhole<T: JSONDecodable & Equatable>(
        _ type: T.Type, _ text: String, options: JSONDecodingOptions = JSONDecodingOptions(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let bytes = Array(text.utf8)
        let decoder = JSONModelDecoder(options: options)
        let whole = Result { try decoder.decode([T].self, from: JSONDocument(bytes: bytes, maxDepth: options.maxDepth)) }
        var results: [(String, Result<[T], any Error>)] = []
        results.append(("in memory", Result {
            var elements: [T] = []
            try decoder.forEachElement(T.self, in: bytes) { elements.append($0) }
            return elements
        }))
        for chunkSize in [1, 2, 3, 7, 64, 1 << 20] {
            results.append(("chunks of \(chunkSize)", Result { try Self.fromFile(T.self, bytes, chunkSize: chunkSize, options: options) }))
        }
        let file = try TemporaryFile(bytes)
        var fromSequence: [T] = []
        do {
            for try await element in decoder.elements(T.self, contentsOf: file.url, batchSize: 2) { fromSequence.append(element) }
            results.append(("sequence", .success(fromSequence)))
        } catch {
            results.append(("sequence", .failure(error)))
        }
        for (name, result) in results {
            switch (result, whole) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "\(name): \(text)", sourceLocation: sourceLocation)
            case (.failure(let a as JSONError), .failure(let b as JSONError)):
                if case .syntax = b.reason {
                    #expect(a == b && a.line == b.line && a.column == b.column, "\(name): \(a) vs \(b): \(text)", sourceLocation: sourceLocation)
                } else if case .syntax = a.reason {
                    // A syntax error after an element that fails to decode: streaming meets
                    // the decoding error first, the whole document the syntax error.
                    Issue.record("\(name): \(a) vs \(b): \(text)", sourceLocation: sourceLocation)
                }
            default:
                Issue.record("\(name): \(result) vs \(whole): \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func wellFormedArrays() async throws {
        try await expectSameAsWhole(Int.self, "[]")
        try await expectSameAsWhole(Int.self, " \n[\n1,\n 2 , 3\t]\r\n ")
        try await expectSameAsWhole(Int.self, "\u{FEFF}[1, 22, 333, 4444, 55555]")
        try await expectSameAsWhole(String.self, #"["a", "b\"]c", "[{,", "\u00e9\ud83d\ude00", "long string long string"]"#)
        try await expectSameAsWhole([Int].self, "[[1, 2], [], [3, 4, 5, 6, 7, 8, 9]]")
        try await expectSameAsWhole(AnyJSON.self, #"[{"a": [1, {"b": "]"}]}, null, true, -1.5e3, "x"]"#)
    }

    @Test func notAnArrayIsDecodedWhole() async throws {
        try await expectSameAsWhole(Int.self, "7")
        try await expectSameAsWhole(AnyJSON.self, #"{"a": 1}"#)
        try await expectSameAsWhole(Int.self, "")
        try await expectSameAsWhole(Int.self, "   ")
    }

    @Test func hostileInputGivesTypedErrors() async throws {
        for text in [
            "[", "[1", "[1,", "[1,]", "[1 2]", "[1]]", "[1] x", "[1]\0", "[tru]", "[01]", "[\"a\0\"]", "[1,\0]",
            "[\"abc", "[{\"a\" 1}]", "[1.]", "[1e]", "[9223372036854775807, 9223372036854775808]", "[1, [2, ]]",
            "[1,\n2,\n3,\nx]", "[\"\\uD800\"]", "[1]   \n\n  }",
        ] {
            try await expectSameAsWhole(AnyJSON.self, text)
            try await expectSameAsWhole(Int.self, text, options: JSONDecodingOptions(mode: .strict))
        }
        let deep = String(repeating: "[", count: 100_000)
        try await expectSameAsWhole(AnyJSON.self, deep)
        try await expectSameAsWhole(AnyJSON.self, "[1, " + deep)
        for depth in [0, 1, 2] {
            try await expectSameAsWhole(AnyJSON.self, "[[1], [[2]]]", options: JSONDecodingOptions(maxDepth: depth))
        }
    }

    @Test func errorsAreLocatedInTheFile() throws {
        let text = "[\n  1,\n  2,\n  x\n]"
        let error = #expect(throws: JSONError.self) { try Self.fromFile(Int.self, Array(text.utf8), chunkSize: 3) }
        #expect(error?.offset == 14)
        #expect(error?.line == 4)
        #expect(error?.column == 3)
        let mismatch = #expect(throws: JSONError.self) {
            try JSONModelDecoder(mode: .strict).forEachElement(Int.self, in: "[1, 2, \"x\"]") { _ in }
        }
        #expect(mismatch?.path == JSONPath([.index(2)]))
    }

    @Test func invalidElementsAreDroppedWhenAsked() throws {
        let options = JSONDecodingOptions(mode: .strict, dropsInvalidElements: true)
        #expect(try Self.fromFile(Int.self, Array(#"[1, "x", 3]"#.utf8), chunkSize: 2, options: options) == [1, 3])
    }

    @Test func theBodysErrorsPassThrough() throws {
        struct Stop: Error {}
        var seen: [Int] = []
        #expect(throws: Stop.self) {
            try JSONModelDecoder().forEachElement(Int.self, in: "[1, 2, 3]") { element in
                seen.append(element)
                if element == 2 { throw Stop() }
            }
        }
        #expect(seen == [1, 2])
    }

    @Test func aMissingFileThrows() async {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-missing-\(UUID().uuidString).json")
        #expect(throws: (any Error).self) { try JSONModelDecoder().forEachElement(Int.self, contentsOf: url) { _ in } }
        await #expect(throws: (any Error).self) {
            for try await _ in JSONModelDecoder().elements(Int.self, contentsOf: url) {}
        }
    }

    /// Streaming reports nothing, so what each element records (here a lenient coercion) is
    /// dropped with it: the report would otherwise grow with the file.
    @Test func streamingKeepsNoReportEntries() throws {
        let text = "[" + Array(repeating: #""1""#, count: 100).joined(separator: ",") + "]"
        let decoder = JSONModelDecoder()
        #expect(try decoder.decodeWithReport([Int].self, from: text).report.entries.count == 100)
        try Array(text.utf8).withUnsafeBufferPointer { bytes in
            var reader = try #require(try JSONElementReader(bytes: bytes, maxDepth: 512))
            var context = JSONDecodingContext(tape: reader.emptyTape, options: decoder.options)
            while try reader.next() {
                #expect(try decoder.decodeElement(Int.self, reader, &context) == 1)
                #expect(context.entries.isEmpty && context.settledEntries.isEmpty)
            }
        }
    }

}
