import Foundation

/// Splits a SQL script into statements at top-level semicolons. PostgresNIO speaks only the
/// extended protocol, which takes one statement per query, so migration files go through this.
/// Quoted strings, quoted identifiers, dollar-quoted bodies and comments are kept intact.
package enum SQLScript {
    package static func statements(in script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        func copy(until end: Int) {
            current.append(contentsOf: chars[index..<end])
            index = end
        }

        while index < chars.count {
            let char = chars[index]
            let next: Unicode.Scalar? = index + 1 < chars.count ? chars[index + 1] : nil
            switch char {
            case "-" where next == "-":
                copy(until: chars[index...].firstIndex(of: "\n") ?? chars.count)
            case "/" where next == "*":
                copy(until: endOfBlockComment(chars, from: index))
            case "'", "\"":
                copy(until: endOfQuoted(chars, from: index, quote: char))
            case "$":
                if let tag = dollarTag(chars, at: index) {
                    copy(until: endOfDollarQuoted(chars, from: index, tag: tag))
                } else {
                    copy(until: index + 1)
                }
            case ";":
                index += 1
                flush()
            default:
                copy(until: index + 1)
            }
        }
        flush()
        return statements
    }

    private static func endOfBlockComment(_ chars: [Unicode.Scalar], from start: Int) -> Int {
        var depth = 0
        var index = start
        while index + 1 < chars.count {
            if chars[index] == "/" && chars[index + 1] == "*" {
                depth += 1
                index += 2
            } else if chars[index] == "*" && chars[index + 1] == "/" {
                depth -= 1
                index += 2
                if depth == 0 { return index }
            } else {
                index += 1
            }
        }
        return chars.count
    }

    /// A doubled quote inside the string is an escaped quote, not its end.
    private static func endOfQuoted(_ chars: [Unicode.Scalar], from start: Int, quote: Unicode.Scalar) -> Int {
        var index = start + 1
        while index < chars.count {
            if chars[index] == quote {
                if index + 1 < chars.count && chars[index + 1] == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        return chars.count
    }

    /// `$$` or `$name$` opening a dollar-quoted string; `$1` (a parameter) is not one.
    private static func dollarTag(_ chars: [Unicode.Scalar], at start: Int) -> [Unicode.Scalar]? {
        var index = start + 1
        while index < chars.count {
            let char = chars[index]
            if char == "$" { return Array(chars[start...index]) }
            let isTagChar =
                char == "_" || char.properties.isAlphabetic || (index > start + 1 && ("0"..."9").contains(char))
            if !isTagChar { return nil }
            index += 1
        }
        return nil
    }

    private static func endOfDollarQuoted(_ chars: [Unicode.Scalar], from start: Int, tag: [Unicode.Scalar]) -> Int {
        var index = start + tag.count
        while index + tag.count <= chars.count {
            if chars[index] == "$" && Array(chars[index..<(index + tag.count)]) == tag {
                return index + tag.count
            }
            index += 1
        }
        return chars.count
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty || trimmed.hasPrefix("--")
        }
    }
}
