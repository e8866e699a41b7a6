import Crypto
import Foundation

extension Sequence<UInt8> {
    /// Lower-case hexadecimal, two digits a byte: digests in the database, keys in Redis,
    /// ids in trace context.
    package var lowerHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension SHA256 {
    /// The SHA-256 of a string's UTF-8 bytes, in lower-case hexadecimal.
    package static func hexDigest(of text: String) -> String {
        hash(data: Data(text.utf8)).lowerHex
    }
}
