import Foundation

/// Finds an object key that appears twice in a JSON text. JSON decoders keep one of the
/// values and drop the other without a word, so `{"startsAt": "2027-07-01T10:00:00Z",
/// "startsAt": "nope"}` would pass validation on a value the client did not mean last.
///
/// One pass over the bytes, remembering the keys of each open object. Keys are compared as
/// the strings they denote (`"a"` and `"\u0061"` are the same key). Text that is not JSON is
/// left to the decoder, which explains it better: the scan then reports nothing.
package enum JSONDuplicateKeys {
    /// The path of the first repeated key (`pollData.question`, `items[2].name`), or nil.
    package static func first(in bytes: some Collection<UInt8>) -> String? {
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

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func run() -> String? {
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "{"):
                    open.append(.object(keys: [], current: nil))
                    position += 1
                    if let repeated = readKey() { return repeated }
                case UInt8(ascii: "["):
                    open.append(.array(index: 0))
                    position += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    _ = open.popLast()
                    position += 1
                case UInt8(ascii: ","):
                    position += 1
                    switch open.last {
                    case .object?:
                        if let repeated = readKey() { return repeated }
                    case .array(let index)?:
                        open[open.count - 1] = .array(index: index + 1)
                    case nil:
                        return nil
                    }
                case UInt8(ascii: "\""):
                    guard skipString() != nil else { return nil }
                default:
                    position += 1
                }
            }
            return nil
        }

        /// Reads the key that starts the next member of the innermost object, if one does.
        mutating func readKey() -> String? {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\""),
                case .object(var keys, _)? = open.last, let key = skipString()
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

        /// Moves past the string starting at `position` and returns what it denotes.
        mutating func skipString() -> String? {
            let start = position
            position += 1
            var escaped = false
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    position += 1
                } else if byte == UInt8(ascii: "\"") {
                    let literal = bytes[start..<position]
                    guard escaped else { return String(decoding: literal.dropFirst().dropLast(), as: UTF8.self) }
                    return try? JSONDecoder().decode(String.self, from: Data(literal))
                }
            }
            return nil
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
            return path
        }
    }
}
