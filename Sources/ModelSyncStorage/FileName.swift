/// The reversible mapping between keys (and suite names) and file names.
///
/// Lowercase ASCII letters, digits, `-`, `_` and `.` (except as the first character) stay as
/// they are; every other byte of the UTF-8 text becomes `%XX` with uppercase hex digits. File
/// names are therefore plain ASCII that never start with a dot, and two different keys never
/// give names that differ only by case or Unicode normalization, so keys stay distinct on
/// case-insensitive (APFS, HFS+) and normalizing file systems.
enum FileName {
    /// The longest encoded name accepted: 255 (the usual file-name limit) less the extension.
    static let limit = 250

    /// Why `name` cannot name a file in a directory without leaving it, or nil when it can.
    static func problem(with name: String) -> StorageError.NameProblem? {
        if name.isEmpty { return .empty }
        if name == "." || name == ".." { return .dotName }
        if name.utf8.contains(0) { return .containsNUL }
        if name.utf8.contains(UInt8(ascii: "/")) { return .containsSlash }
        return nil
    }

    /// A name's file name, or why it has none.
    enum Encoding {
        case encoded(String)
        case rejected(StorageError.NameProblem)
    }

    /// Checks `name` and returns its encoded form, or the problem that rejects it.
    static func encode(_ name: String) -> Encoding {
        if let problem = problem(with: name) { return .rejected(problem) }
        var encoded: [UInt8] = []
        encoded.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                encoded.append(byte)
            case UInt8(ascii: ".") where !encoded.isEmpty:
                encoded.append(byte)
            default:
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hexDigits[Int(byte >> 4)])
                encoded.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        if encoded.count > limit { return .rejected(.tooLong(length: encoded.count, limit: limit)) }
        return .encoded(String(decoding: encoded, as: UTF8.self))
    }

    /// The name that `encode` turned into `fileName`, or nil when `fileName` is not one of its
    /// results (a file somebody else put in the directory).
    static func decode(_ fileName: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = fileName.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        // Encoding again rejects what encode never produces: lowercase hex, needless escapes,
        // invalid UTF-8 (decoded with replacement characters, which encode differently).
        let name = String(decoding: bytes, as: UTF8.self)
        guard case .encoded(fileName) = encode(name) else { return nil }
        return name
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        hexDigits.firstIndex(of: digit).map(UInt8.init)
    }
}
