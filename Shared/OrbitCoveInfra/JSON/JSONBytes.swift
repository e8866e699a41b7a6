import Foundation

/// JSON text for scalars, byte for byte as swift-foundation's `JSONWriter` writes it, except UUIDs.
extension [UInt8] {
    mutating func appendJSONString(_ string: String) {
        var string = string
        string.withUTF8 { appendJSONString(utf8: $0) }
    }

    /// RFC 9562 asks for lower case; `UUID.uuidString` is upper case, which is why this encoder exists.
    mutating func appendJSONUUID(_ uuid: UUID) {
        Swift.withUnsafeBytes(of: uuid.uuid) { raw in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { text in
                var position = 0
                func put(_ byte: UInt8) {
                    text[position] = byte
                    position += 1
                }
                put(UInt8(ascii: "\""))
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 { put(UInt8(ascii: "-")) }
                    put(lowerHexDigit(byte >> 4))
                    put(lowerHexDigit(byte & 0xF))
                }
                put(UInt8(ascii: "\""))
                append(contentsOf: UnsafeBufferPointer(text))
            }
        }
    }

    /// Same digits as `description`, which is what JSONEncoder writes, without making a String.
    mutating func appendJSONInteger<Integer: FixedWidthInteger>(_ value: Integer) {
        guard Integer.bitWidth <= 64 else {
            append(contentsOf: value.description.utf8)
            return
        }
        var magnitude = UInt64(truncatingIfNeeded: value.magnitude)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { append(UInt8(ascii: "-")) }
            append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// JSONEncoder writes `description` less a trailing ".0" (1.0 → `1`, 1e+21 stays). Callers
    /// reject NaN and infinity first, as JSONEncoder's default strategy does.
    mutating func appendJSONFloat<Number: BinaryFloatingPoint & CustomStringConvertible>(_ value: Number) {
        var text = value.description
        text.withUTF8 { utf8 in
            let endsInPointZero =
                utf8.count >= 2 && utf8[utf8.count - 2] == UInt8(ascii: ".")
                && utf8[utf8.count - 1] == UInt8(ascii: "0")
            append(contentsOf: UnsafeBufferPointer(rebasing: utf8[..<(endsInPointZero ? utf8.count - 2 : utf8.count)]))
        }
    }

    mutating func appendJSONBool(_ value: Bool) {
        append(value ? "true" : "false")
    }

    mutating func appendJSONNull() {
        append("null")
    }

}

func lowerHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
}
