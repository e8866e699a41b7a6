/// Where JSON text goes: an array while values are encoded, then memory sized beforehand.
protocol ByteSink {
    mutating func append(_ byte: UInt8)
    mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>)
}

extension [UInt8]: ByteSink {}

/// Strings as swift-foundation's `JSONWriter` writes them with `.withoutEscapingSlashes`: quotes,
/// backslashes and control characters escaped (`\n`, lower-case `\u001f`), everything else raw.
extension ByteSink {
    mutating func appendJSONString(utf8: UnsafeBufferPointer<UInt8>) {
        append(UInt8(ascii: "\""))
        appendJSONEscaped(utf8: utf8)
        append(UInt8(ascii: "\""))
    }

    /// Copies runs that need no escape in one go; almost every string is a single run.
    mutating func appendJSONEscaped(utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if index > runStart {
                append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            }
            appendEscape(for: byte)
            runStart = index + 1
        }
        if runStart < utf8.count {
            append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
    }

    private mutating func appendEscape(for byte: UInt8) {
        append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
        case 0x08: append(UInt8(ascii: "b"))
        case 0x0C: append(UInt8(ascii: "f"))
        case UInt8(ascii: "\n"): append(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): append(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): append(UInt8(ascii: "t"))
        default:
            append("u00")
            append(lowerHexDigit(byte >> 4))
            append(lowerHexDigit(byte & 0xF))
        }
    }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { append(contentsOf: $0) }
    }
}

/// The writer's output: one allocation of `Tree.outputBound` bytes, filled without Array's checks
/// on each append. The bound is exact arithmetic over the tree, but a mistake in it must not
/// write past the end, so every append is still checked, and an overflow fails the encode.
struct FixedOutput: ByteSink {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    mutating func append(_ byte: UInt8) {
        guard count < buffer.count else {
            overflowed = true
            return
        }
        buffer.initializeElement(at: count, to: byte)
        count += 1
    }

    mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count <= buffer.count - count else {
            overflowed = true
            return
        }
        _ = UnsafeMutableBufferPointer(rebasing: buffer[count..<count + bytes.count]).initialize(fromContentsOf: bytes)
        count += bytes.count
    }
}
