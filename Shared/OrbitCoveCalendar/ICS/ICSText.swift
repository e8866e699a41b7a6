/// Value and parameter encodings from RFC 5545 3.3.11 (TEXT) and 3.2 (parameters).
enum ICSText {
    /// A TEXT value: backslash, semicolon and comma escaped, every kind of line break as `\n`.
    /// Other control characters are not allowed in TEXT (only TSAFE-CHAR), so they are dropped.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        var previousWasCarriageReturn = false
        for scalar in text.unicodeScalars {
            defer { previousWasCarriageReturn = scalar == "\r" }
            switch scalar {
            case "\\": result += "\\\\"
            case ";": result += "\\;"
            case ",": result += "\\,"
            case "\r": result += "\\n"
            case "\n": if !previousWasCarriageReturn { result += "\\n" }
            case "\t": result.unicodeScalars.append(scalar)
            default:
                if !isControl(scalar) { result.unicodeScalars.append(scalar) }
            }
        }
        return result
    }

    /// A parameter value (e.g. a TZID): quoted when it holds `:`, `;` or `,`; DQUOTE and controls cannot
    /// appear even when quoted, so they are dropped.
    static func parameterValue(_ text: String) -> String {
        let safe = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\"" && !isControl($0) }))
        return safe.contains(where: { ":;,".contains($0) }) ? "\"" + safe + "\"" : safe
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F
    }
}
