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

extension Data {
    /// The bytes of a hexadecimal string (either case), or `nil` when it is not one.
    package init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 48...57: digit - 48
            case 97...102: digit - 87
            case 65...70: digit - 55
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }
}
