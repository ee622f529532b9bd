extension JSONWriter {
    /// Reformats valid JSON text with one value per line.
    ///
    /// Nested values are indented by `indent` spaces per level and object members read
    /// `"key": value`. Empty arrays and objects stay `[]` and `{}`. Whitespace in the input is
    /// dropped, so already formatted text works too. The output has no trailing newline.
    public static func prettyPrinted(_ json: [UInt8], indent: Int = 2) -> [UInt8] {
        let indent = max(indent, 0)
        var output: [UInt8] = []
        output.reserveCapacity(json.count * 2)
        var depth = 0
        func newline() {
            output.append(UInt8(ascii: "\n"))
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * indent))
        }
        var i = 0
        while i < json.count {
            let b = json[i]
            switch b {
            case UInt8(ascii: "\""):
                // Copy the string through its closing quote, skipping over escaped characters.
                let start = i
                i += 1
                while i < json.count && json[i] != UInt8(ascii: "\"") {
                    i += json[i] == UInt8(ascii: "\\") ? 2 : 1
                }
                output.append(contentsOf: json[start..<min(i + 1, json.count)])
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                let next = json[(i + 1)...].firstIndex { !isWhitespace($0) } ?? json.count
                // In ASCII, ']' is '[' + 2 and '}' is '{' + 2.
                if next < json.count && json[next] == b + 2 {
                    output.append(b)
                    output.append(b + 2)
                    i = next
                } else {
                    output.append(b)
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = max(depth - 1, 0)
                newline()
                output.append(b)
            case UInt8(ascii: ","):
                output.append(b)
                newline()
            case UInt8(ascii: ":"):
                output.append(b)
                output.append(UInt8(ascii: " "))
            case _ where isWhitespace(b):
                break
            default:
                output.append(b)
            }
            i += 1
        }
        return output
    }

    private static func isWhitespace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09
    }
}
