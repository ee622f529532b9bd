import Foundation

/// A string that compares and hashes by its UTF-8 bytes.
///
/// `String`'s `==` is Unicode canonical equivalence: `"é" == "e\u{301}"`. SQLite, the file
/// system and servers see bytes, so wherever a string is an identity (a key, a table or
/// column name, a path) two such spellings are two different things, and a dictionary or set
/// keyed by `String` would merge them. Key those by `ExactText` instead.
package struct ExactText: Hashable, Sendable, CustomStringConvertible {
    /// The string, as given.
    package let text: String

    /// Wraps `text`.
    package init(_ text: String) { self.text = text }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.text.isIdentical(to: rhs.text) }

    package func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    package var description: String { text }
}

extension String {
    /// Whether the two strings have the same UTF-8 bytes (`==` also equates canonically
    /// equivalent spellings, `"é"` and `"e\u{301}"`). One `memcmp`: this runs on every
    /// statement-cache and key lookup.
    package func isIdentical(to other: String) -> Bool {
        // One representation (the same storage, or the same small string) is one content:
        // the usual case in the caches, where a query's SQL is the string it was cached under.
        let sameRepresentation = withUnsafeBytes(of: self) { left in
            withUnsafeBytes(of: other) { right in
                guard let a = left.baseAddress, let b = right.baseAddress else { return false }
                return memcmp(a, b, left.count) == 0
            }
        }
        if sameRepresentation { return true }
        var (lhs, rhs) = (self, other)
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                guard let a = left.baseAddress, let b = right.baseAddress else { return left.count == right.count }
                return memcmp(a, b, left.count) == 0
            }
        }
    }
}
