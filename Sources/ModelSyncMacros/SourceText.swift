import SwiftSyntax

// Helpers for copying user source text into generated code.

/// `text` as a Swift string literal that evaluates to exactly `text`.
func stringLiteral(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": result += "\\\\"
        case "\"": result += "\\\""
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case "\0": result += "\\0"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
    }
    return result + "\""
}

/// An identifier's name without the backticks that escape keywords.
func unescapedName(_ token: TokenSyntax) -> String {
    let text = token.text
    if text.count >= 2, text.hasPrefix("`"), text.hasSuffix("`") {
        return String(text.dropFirst().dropLast())
    }
    return text
}

/// The whitespace at the start of the line on which `node` begins.
func lineIndentation(of node: some SyntaxProtocol) -> String {
    let trivia = node.leadingTrivia.description
    guard let lastNewline = trivia.lastIndex(where: \.isNewline) else { return "" }
    return String(trivia[trivia.index(after: lastNewline)...].prefix { $0 == " " || $0 == "\t" })
}

/// A copied expression, possibly spanning several lines.
///
/// Continuation lines keep their indentation relative to the declaration the expression
/// came from, so multi-line closures and string literals stay readable and valid when
/// the text is re-indented at a different depth.
struct SourceSnippet {
    /// The text with the declaration's indentation removed from continuation lines.
    let text: String

    init(_ node: some SyntaxProtocol, declarationIndentation: String) {
        let lines = node.trimmedDescription.split(separator: "\n", omittingEmptySubsequences: false)
        let continuation = lines.dropFirst()
        // Strip only when every non-empty line has the prefix; anything else could change
        // the content of a multi-line string literal.
        let canStrip =
            !declarationIndentation.isEmpty
            && continuation.allSatisfy { $0.isEmpty || $0.hasPrefix(declarationIndentation) }
        if canStrip {
            let stripped = continuation.map { $0.dropFirst(declarationIndentation.count) }
            text = ([lines[0]] + stripped).joined(separator: "\n")
        } else {
            text = lines.joined(separator: "\n")
        }
    }

    /// The text with continuation lines indented by `indentation`.
    func indented(by indentation: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
            .map { index, line in index == 0 || line.isEmpty ? String(line) : indentation + line }
            .joined(separator: "\n")
    }
}
