extension String {
    /// The text with every `byte` (an ASCII byte: a quote, a comma, NUL) replaced by
    /// `replacement`, compared by UTF-8 bytes.
    ///
    /// Why not `replacingOccurrences`: it compares characters, and a quote followed by a
    /// combining mark (`"\u{301}`) is one character that is not `"`, so it stayed undoubled
    /// while SQL, FTS5 and file names still read its quote byte. Replacing an ASCII byte with
    /// ASCII bytes keeps the UTF-8 valid.
    package func replacingASCII(_ byte: UInt8, with replacement: String) -> String {
        guard utf8.contains(byte) else { return self }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + replacement.utf8.count)
        for current in utf8 {
            if current == byte { bytes.append(contentsOf: replacement.utf8) } else { bytes.append(current) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
