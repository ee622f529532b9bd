/// How a Swift property name becomes an external key (a JSON key, later a column name).
public enum KeyStrategy: Sendable {
    /// The property name as written: `publishedAt`.
    case useDefaultKeys
    /// Lower-case words joined by underscores: `published_at`, `html_url` for `htmlURL`.
    case snakeCase
    /// Lower-case words joined by hyphens: `published-at`.
    case kebabCase
    /// The first letter upper-cased: `PublishedAt`.
    case pascalCase
    /// Any mapping you supply.
    case custom(@Sendable (String) -> String)

    /// The external key for a property name.
    public func key(for name: String) -> String {
        switch self {
        case .useDefaultKeys: name
        case .snakeCase: Self.words(of: name).joined(separator: "_")
        case .kebabCase: Self.words(of: name).joined(separator: "-")
        case .pascalCase: name.prefix(1).uppercased() + name.dropFirst()
        case .custom(let transform): transform(name)
        }
    }

    /// Splits a camelCase name into lower-cased words. A run of capitals is one word (an
    /// acronym) that ends before a capital followed by a lower-case letter: `URLString` →
    /// `url`, `string`. Underscores and digits stay inside their word.
    static func words(of name: String) -> [String] {
        let characters = Array(name)
        var words: [String] = []
        var current = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, !current.isEmpty {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if !previous.isUppercase || nextIsLower {
                    words.append(current)
                    current = ""
                }
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words.map { $0.lowercased() }
    }
}
