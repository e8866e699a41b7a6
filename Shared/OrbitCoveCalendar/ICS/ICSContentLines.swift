/// Accumulates content lines and renders them folded, with CRLF endings (RFC 5545 3.1).
struct ICSContentLines {
    /// Octets per physical line, excluding the CRLF.
    static let maximumLineOctets = 75

    private(set) var lines: [String] = []

    /// Appends `NAME:value`. `value` must already be encoded for its type.
    mutating func append(_ name: String, _ value: String) {
        append(name, [], value)
    }

    /// Appends `NAME;PARAM=VALUE:value`. `value` must already be encoded for its type.
    mutating func append(_ name: String, _ parameters: [(String, String)], _ value: String) {
        let parameterText = parameters.map { ";" + $0.0 + "=" + ICSText.parameterValue($0.1) }.joined()
        lines.append(name + parameterText + ":" + value)
    }

    mutating func appendText(_ name: String, _ text: String) {
        append(name, ICSText.escaped(text))
    }

    var rendered: String {
        lines.map { ICSContentLines.folded($0) + "\r\n" }.joined()
    }

    /// Splits a line into physical lines of at most 75 octets, each continuation starting with one space.
    /// Breaks fall between characters where possible, and never inside a UTF-8 sequence.
    static func folded(_ line: String) -> String {
        guard line.utf8.count > maximumLineOctets else { return line }
        var result = ""
        var used = 0
        func append(_ piece: Substring, octets: Int) {
            if used + octets > maximumLineOctets {
                result += "\r\n "
                used = 1
            }
            result += piece
            used += octets
        }
        for character in line {
            let octets = character.utf8.count
            if octets <= maximumLineOctets - 1 {
                append(Substring(String(character)), octets: octets)
            } else {
                // A grapheme too long for any line (long emoji sequences, stacked marks) splits at scalars.
                for scalar in character.unicodeScalars {
                    append(Substring(String(scalar)), octets: scalar.utf8.count)
                }
            }
        }
        return result
    }
}
