import Foundation

/// Reads the elements of a file's root JSON array a chunk of the file at a time: memory holds a
/// window of the file (a chunk, or the largest element if larger), never the whole document.
///
/// Before each element the window is checked to hold it whole (a light scan for the comma or
/// bracket that ends it, outside strings); if not, the consumed bytes are dropped and more are
/// read. Then a `JSONElementReader` on the window parses and validates it strictly. Errors carry
/// offsets, lines and columns in the file.
final class JSONFileElementReader {
    private let handle: FileHandle
    private let chunkSize: Int
    let maxDepth: Int
    private var storage: UnsafeMutableBufferPointer<UInt8>
    /// How many bytes of `storage` hold input.
    private var filled = 0
    /// The file offset of `storage[0]`.
    private var base = 0
    /// Newlines in the dropped bytes, and the file offset where the line after the last starts.
    private var linesBefore = 0
    private var lineStart = 0
    private var atEnd = false
    private(set) var reader: JSONElementReader?

    /// Opens `url` for reading.
    ///
    /// - Throws: The file system's error when the file cannot be opened.
    init(url: URL, maxDepth: Int, chunkSize: Int = 1 << 20) throws {
        handle = try FileHandle(forReadingFrom: url)
        self.maxDepth = maxDepth
        self.chunkSize = max(chunkSize, 16)
        storage = .allocate(capacity: self.chunkSize)
    }

    deinit {
        storage.deallocate()
        try? handle.close()
    }

    private var window: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: storage[..<filled]) }

    /// Reads up to the array's opening bracket: false when the file does not hold a root array
    /// (or `maxDepth` allows none), so that the caller decodes it whole.
    func open() throws -> Bool {
        while true {
            let start = filled >= 3 && storage[0] == 0xEF && storage[1] == 0xBB && storage[2] == 0xBF ? 3 : 0
            let first = JSONParser.skipWhitespace(window, start)
            if first < filled && filled >= 3 || atEnd {
                reader = try JSONElementReader(bytes: window, maxDepth: maxDepth)
                return reader != nil
            }
            try refill(keeping: 0)
        }
    }

    /// Parses the next element into ``reader`` (true), or reads the end of the array (false).
    ///
    /// - Throws: ``JSONError`` for malformed input, located in the file; the file system's
    ///   error when reading fails.
    func next() throws -> Bool {
        guard var current = reader else { return false }
        defer { reader = current }
        while !atEnd && !holdsNextElement(current) {
            let keep = current.position
            try refill(keeping: keep)
            current.rebase(onto: window, dropping: keep)
        }
        do {
            return try current.next()
        } catch var error as JSONError {
            relocate(&error)
            throw error
        }
    }

    /// Gives a window-relative error its file offset, line and column.
    func relocate(_ error: inout JSONError) {
        guard let offset = error.offset else { return }
        var line = linesBefore + 1
        var start = lineStart
        for i in 0..<min(offset, filled) where storage[i] == UInt8(ascii: "\n") {
            line += 1
            start = base + i + 1
        }
        error.offset = base + offset
        error.line = line
        error.column = base + offset - start + 1
    }

    /// Whether the window holds everything `reader.next()` looks at: the separator, the whole
    /// next element and the byte after it; or, at the array's end, the rest of the file.
    private func holdsNextElement(_ reader: JSONElementReader) -> Bool {
        let bytes = window
        var i = JSONParser.skipWhitespace(bytes, reader.position)
        guard i < bytes.count else { return false }
        // The end of the array: the reader checks that only whitespace follows, up to the end.
        if bytes[i] == UInt8(ascii: "]") { return false }
        if reader.count > 0 {
            // Anything but a comma is an error the reader reports.
            guard bytes[i] == UInt8(ascii: ",") else { return true }
            i += 1
        }
        // The element ends at the first comma or closing bracket outside strings and nested
        // containers. Malformed input may make this early; then the parser fails before it.
        var depth = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\""):
                i += 1
                while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                    i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                // Hostile nesting: the parser stops at its depth limit, within the window.
                if depth > maxDepth { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 0 { return true }
                depth -= 1
            case UInt8(ascii: ","):
                if depth == 0 { return true }
            default:
                break
            }
            i += 1
        }
        return false
    }

    /// Drops the first `keep` bytes and reads more: at least a chunk, and at least as much as
    /// the window still holds, so that an element larger than a chunk is scanned a number of
    /// times logarithmic in its size.
    private func refill(keeping keep: Int) throws {
        if keep > 0 {
            for i in 0..<keep where storage[i] == UInt8(ascii: "\n") {
                linesBefore += 1
                lineStart = base + i + 1
            }
            let rest = filled - keep
            if rest > 0, let start = storage.baseAddress {
                // Overlapping ranges: copyMemory moves like memmove.
                UnsafeMutableRawPointer(start).copyMemory(from: start + keep, byteCount: rest)
            }
            filled = rest
            base += keep
        }
        let wanted = max(chunkSize, filled)
        if storage.count - filled < wanted {
            let larger = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: filled + wanted)
            _ = larger.initialize(fromContentsOf: storage[..<filled])
            storage.deallocate()
            storage = larger
        }
        let data = try handle.read(upToCount: wanted) ?? Data()
        if data.isEmpty {
            atEnd = true
        } else {
            _ = data.copyBytes(to: UnsafeMutableBufferPointer(rebasing: storage[filled..<filled + data.count]))
            filled += data.count
        }
    }
}
