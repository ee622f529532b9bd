import Foundation

extension JSONModelDecoder {
    /// Decodes the elements of the root array in `source` one at a time, in order, and calls
    /// `body` with each.
    ///
    /// Nothing is kept between calls: memory holds the input, one element's tape and the
    /// element being handed over, so a large array of models can be processed (saved, filtered,
    /// counted) without an array of all of them. Each element is parsed and validated as it is
    /// reached, so `body` may see elements before a malformed one further on throws.
    ///
    /// ```swift
    /// try JSONModelDecoder().forEachElement(User.self, in: data) { user in
    ///     try database.insert(user)
    /// }
    /// ```
    ///
    /// Input that is not an array is decoded as `[T]` (in lenient mode a single value becomes one
    /// element) and its elements are handed over the same way. Options apply as in
    /// ``decode(_:from:at:)``: with ``JSONDecodingOptions/dropsInvalidElements`` an element that
    /// fails is skipped; lenient steps are not reported.
    ///
    /// - Throws: ``JSONError`` for malformed input or an element that does not decode (its path
    ///   starts with the element's index); whatever `body` throws, unchanged.
    public func forEachElement<T: JSONDecodable>(
        _ type: T.Type, in source: some JSONSource, _ body: (T) throws -> Void
    ) throws {
        let streamed: Bool? = try withInputBytes(source) { bytes in
            guard var reader = try JSONElementReader(bytes: bytes, maxDepth: options.maxDepth) else { return false }
            var context = JSONDecodingContext(tape: reader.emptyTape, options: options)
            while try reader.next() {
                if let element = try decodeElement(type, reader, &context) { try body(element) }
            }
            return true
        }
        if streamed != true {
            for element in try decode([T].self, from: source) { try body(element) }
        }
    }

    /// Decodes the elements of the root array in the file at `url` one at a time, in order, and
    /// calls `body` with each, reading the file a chunk at a time.
    ///
    /// Memory holds a chunk of the file (or the largest element, if larger), one element's tape
    /// and the element being handed over: a file of any size decodes in memory that does not
    /// grow with it. See ``forEachElement(_:in:_:)`` for what happens to other input and errors.
    ///
    /// - Throws: ``JSONError`` for malformed input (offsets, lines and columns are the file's)
    ///   or an element that does not decode; the file system's error when the file cannot be
    ///   read; whatever `body` throws, unchanged.
    public func forEachElement<T: JSONDecodable>(
        _ type: T.Type, contentsOf url: URL, _ body: (T) throws -> Void
    ) throws {
        let file = try JSONFileElementReader(url: url, maxDepth: options.maxDepth)
        guard try file.open(), let first = file.reader else {
            for element in try decode([T].self, from: Data(contentsOf: url)) { try body(element) }
            return
        }
        var context = JSONDecodingContext(tape: first.emptyTape, options: options)
        while try file.next() {
            guard let reader = file.reader else { break }
            let element: T?
            do {
                element = try decodeElement(type, reader, &context)
            } catch var error as JSONError {
                file.relocate(&error)
                throw error
            }
            if let element { try body(element) }
        }
    }

    /// The elements of the root array in the file at `url`, decoded as the sequence is iterated
    /// (a batch at a time, reading the file a chunk at a time) with the memory use of
    /// ``forEachElement(_:contentsOf:_:)``.
    ///
    /// ```swift
    /// for try await user in JSONModelDecoder().elements(User.self, contentsOf: url) {
    ///     await store.save(user)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type of the elements.
    ///   - url: The file, whose root is an array.
    ///   - batchSize: How many elements are decoded at a time (at least 1).
    public func elements<T: JSONDecodable>(
        _ type: T.Type, contentsOf url: URL, batchSize: Int = 256
    ) -> JSONArrayElements<T> {
        JSONArrayElements(decoder: self, url: url, batchSize: max(1, batchSize))
    }

    /// Decodes the reader's current element through the identity map, if any.
    func decodeElement<T: JSONDecodable>(
        _ type: T.Type, _ reader: JSONElementReader, _ context: inout JSONDecodingContext
    ) throws -> T? {
        // Streaming reports nothing: what an element recorded goes with it, or the report
        // would grow with the file.
        defer { context.discardReport() }
        var element: T?
        do {
            if let map = options.identityMap {
                try map.withMergeLock { try context.decodeElement(type, of: reader) { element = $0 } }
            } else {
                try context.decodeElement(type, of: reader) { element = $0 }
            }
            return element
        } catch let error as JSONError {
            throw error
        } catch {
            // A custom JSONDecodable threw its own error.
            throw JSONError(wrapping: error)
        }
    }
}

/// The elements of a file's root JSON array, decoded as they are iterated: see
/// ``JSONModelDecoder/elements(_:contentsOf:batchSize:)``.
///
/// Each iteration opens the file anew. Iteration throws ``JSONError`` for malformed input or an
/// element that does not decode, and the file system's error when the file cannot be read.
public struct JSONArrayElements<Element: JSONDecodable>: AsyncSequence, Sendable {
    let decoder: JSONModelDecoder
    let url: URL
    let batchSize: Int

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(decoder: decoder, url: url, batchSize: batchSize)
    }

    /// Reads the file a batch of elements at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let decoder: JSONModelDecoder
        let url: URL
        let batchSize: Int
        private var file: JSONFileElementReader?
        private var context: JSONDecodingContext?
        /// Elements decoded and not yet returned, in reverse order.
        private var pending: [Element] = []
        /// The elements of input that is not a root array, decoded whole.
        private var whole: [Element]?
        private var done = false

        init(decoder: JSONModelDecoder, url: URL, batchSize: Int) {
            self.decoder = decoder
            self.url = url
            self.batchSize = batchSize
        }

        public mutating func next() async throws -> Element? {
            if let element = pending.popLast() { return element }
            guard !done else { return nil }
            do {
                try fill()
            } catch {
                done = true
                throw error
            }
            if pending.isEmpty { done = true }
            return pending.popLast()
        }

        /// Decodes the next batch into `pending`.
        private mutating func fill() throws {
            if file == nil && whole == nil {
                let opened = try JSONFileElementReader(url: url, maxDepth: decoder.options.maxDepth)
                if try opened.open(), let reader = opened.reader {
                    file = opened
                    context = JSONDecodingContext(tape: reader.emptyTape, options: decoder.options)
                } else {
                    whole = try decoder.decode([Element].self, from: Data(contentsOf: url)).reversed()
                }
            }
            if var rest = whole {
                pending = Array(rest.suffix(batchSize))
                rest.removeLast(pending.count)
                whole = rest
                return
            }
            guard let file, var context else { return }
            defer { self.context = context }
            var batch: [Element] = []
            batch.reserveCapacity(batchSize)
            while batch.count < batchSize, try file.next(), let reader = file.reader {
                do {
                    if let element = try decoder.decodeElement(Element.self, reader, &context) { batch.append(element) }
                } catch var error as JSONError {
                    file.relocate(&error)
                    throw error
                }
            }
            pending = batch.reversed()
        }
    }
}
