import Foundation

/// What JSON decoders take that RFC 8259 does not, found in one pass over a JSON text before it
/// is decoded:
///
/// - **a key named twice in one object.** Decoders keep one of the values and drop the other
///   without a word, so `{"startsAt": "2027-07-01T10:00:00Z", "startsAt": "nope"}` would pass
///   validation on a value the client did not mean last;
/// - **a trailing comma** (`{"a": 1,}`, `[1, 2,]`), which Foundation's decoder reads as if it
///   were not there: what sent it is not writing JSON, and may mean something else by it;
/// - **a number no `Double` holds** (`1e400`, `-1e400`, `1e-400`, four hundred digits), which
///   the decoder refuses as "not an object", naming the wrong problem; and a number with a
///   leading zero (`05`) or a control character left raw inside a string, which are not JSON.
///
/// The scan remembers the keys of each open object. Keys are compared as the strings they
/// denote (`"a"` and `"\u0061"` are the same key; only a key with an escape is decoded, values
/// are skipped). Text that is not JSON otherwise, or nested deeper than the decoder takes, is
/// left to the decoder, which explains it better: the scan then reports nothing.
package enum StrictJSON {
    /// As deep as `JSONDecoder` reads; past it the decoder refuses the body anyway.
    static let maxDepth = 512
    /// A path is named by at most this many characters (the response need not echo a megabyte).
    static let maxPathLength = 100

    package enum Problem: Equatable, Sendable {
        /// The path of the key named again (`pollData.question`, `items[2].name`).
        case repeatedKey(String)
        /// A comma with no member or element after it.
        case trailingComma
        /// The path of a number too large or too small (but not zero) for a `Double`.
        case numberOutOfRange(String)
        /// Not JSON in a way the decoder would not name: a leading zero, a number cut short
        /// (`-`, `1.`, `1e`), a raw control character inside a string.
        case notJSON
    }

    /// The first problem in `bytes`, or nil.
    package static func problem(in bytes: some Collection<UInt8>) -> Problem? {
        var scanner = Scanner(Array(bytes))
        return scanner.run()
    }

    private enum Container {
        case object(keys: Set<String>, current: String?)
        case array(index: Int)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0
        var open: [Container] = []
        /// Set by a string with a raw control character in it.
        var rawControl = false

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func run() -> Problem? {
            while position < bytes.count {
                if rawControl { return .notJSON }
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "{"):
                    guard open.count < StrictJSON.maxDepth else { return nil }
                    open.append(.object(keys: [], current: nil))
                    position += 1
                    if let repeated = readKey() { return .repeatedKey(repeated) }
                case UInt8(ascii: "["):
                    guard open.count < StrictJSON.maxDepth else { return nil }
                    open.append(.array(index: 0))
                    position += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    _ = open.popLast()
                    position += 1
                case UInt8(ascii: ","):
                    position += 1
                    skipWhitespace()
                    if position < bytes.count, !open.isEmpty,
                        bytes[position] == UInt8(ascii: "}") || bytes[position] == UInt8(ascii: "]")
                    {
                        return .trailingComma
                    }
                    switch open.last {
                    case .object?:
                        if let repeated = readKey() { return .repeatedKey(repeated) }
                    case .array(let index)?:
                        open[open.count - 1] = .array(index: index + 1)
                    case nil:
                        return nil
                    }
                case UInt8(ascii: "\""):
                    guard skipString(decoding: false) != nil else { return nil }
                case UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if let problem = readNumber() { return problem }
                default:
                    position += 1
                }
            }
            return rawControl ? .notJSON : nil
        }

        /// Moves past the number starting at `position`; what is wrong with it, if anything
        /// (anything else not JSON about it is the decoder's to say).
        mutating func readNumber() -> Problem? {
            let start = position
            while position < bytes.count, Self.numberBytes.contains(bytes[position]) { position += 1 }
            let token = bytes[start..<position]
            // RFC 8259's number: `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?. Not
            // one (`05`, `-`, `1.`, `1e`), the decoder would name the field "not an object".
            guard Self.isNumber(token), let value = Double(String(decoding: token, as: UTF8.self)) else {
                return .notJSON
            }
            let mantissa = token.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
            let nonzero = mantissa.contains { (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0) }
            if value.isInfinite || (value == 0 && nonzero) { return .numberOutOfRange(path()) }
            return nil
        }

        static let numberBytes = Set("+-.0123456789eE".utf8)

        /// Whether `token` is a number as RFC 8259 writes one.
        static func isNumber(_ token: ArraySlice<UInt8>) -> Bool {
            var index = token.startIndex
            func digits() -> Int {
                let from = index
                while index < token.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(token[index]) {
                    index += 1
                }
                return index - from
            }
            func take(_ allowed: String) -> Bool {
                guard index < token.endIndex, allowed.utf8.contains(token[index]) else { return false }
                index += 1
                return true
            }
            _ = take("-")
            if take("0") {
                // A leading zero stands alone.
            } else if digits() == 0 {
                return false
            }
            if take("."), digits() == 0 { return false }
            if take("eE") {
                _ = take("+-")
                if digits() == 0 { return false }
            }
            return index == token.endIndex
        }

        /// Reads the key that starts the next member of the innermost object, if one does.
        mutating func readKey() -> String? {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\""),
                case .object(var keys, _)? = open.last, let key = skipString(decoding: true)
            else { return nil }
            guard keys.insert(key).inserted else {
                open[open.count - 1] = .object(keys: keys, current: key)
                return path()
            }
            open[open.count - 1] = .object(keys: keys, current: key)
            return nil
        }

        mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        /// Moves past the string starting at `position`; returns what it denotes when
        /// `decoding` (a key), an empty string otherwise, and nil for a string never closed.
        mutating func skipString(decoding: Bool) -> String? {
            let start = position
            position += 1
            var escaped = false
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    position += 1
                } else if byte < 0x20 {
                    rawControl = true
                } else if byte == UInt8(ascii: "\"") {
                    guard decoding else { return "" }
                    let literal = bytes[start..<position]
                    let inner = literal.dropFirst().dropLast()
                    return escaped ? Self.unescape(inner) : String(decoding: inner, as: UTF8.self)
                }
            }
            return nil
        }

        /// The text a string's escapes denote (RFC 8259 §7), or nil for an escape that is none.
        static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
            var scalars = String.UnicodeScalarView()
            var plain: [UInt8] = []
            var index = bytes.startIndex
            func flush() {
                scalars.append(contentsOf: String(decoding: plain, as: UTF8.self).unicodeScalars)
                plain.removeAll(keepingCapacity: true)
            }
            func hex(at start: Int) -> UInt32? {
                guard start + 4 <= bytes.endIndex else { return nil }
                return UInt32(String(decoding: bytes[start..<start + 4], as: UTF8.self), radix: 16)
            }
            while index < bytes.endIndex {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "\\"), index + 1 < bytes.endIndex else {
                    plain.append(byte)
                    index += 1
                    continue
                }
                let simple: [UInt8: UInt8] = [
                    UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F,
                    UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A,
                    UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
                ]
                if let replacement = simple[bytes[index + 1]] {
                    plain.append(replacement)
                    index += 2
                    continue
                }
                guard bytes[index + 1] == UInt8(ascii: "u"), var code = hex(at: index + 2) else { return nil }
                index += 6
                if (0xD800...0xDBFF).contains(code), index + 1 < bytes.endIndex, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u"), let low = hex(at: index + 2), (0xDC00...0xDFFF).contains(low)
                {
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                flush()
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            }
            flush()
            return String(scalars)
        }

        func path() -> String {
            var path = ""
            for container in open {
                switch container {
                case .object(_, let key?): path += path.isEmpty ? key : ".\(key)"
                case .object(_, nil): break
                case .array(let index): path += "[\(index)]"
                }
            }
            return String(path.prefix(StrictJSON.maxPathLength))
        }
    }
}
