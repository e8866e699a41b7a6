import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs, JWKs and this API's opaque tokens
/// (cursors, sync tokens, refresh tokens) write bytes: the one encoder and decoder of it here.
/// Both work on the bytes: Foundation's string replacing went through `NSString`, which showed
/// in core's profiles wherever cursors were read (BENCHMARKS.md, "The hot read path").
extension Data {
    /// Also accepts standard base64's `+` and `/`, and padding, as it always has.
    package init?(base64URLEncoded text: String) {
        var base64 = [UInt8]()
        base64.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: base64.append(byte)
            }
        }
        base64.append(contentsOf: repeatElement(UInt8(ascii: "="), count: (4 - base64.count % 4) % 4))
        self.init(base64Encoded: Data(base64))
    }

    package func base64URLEncodedString() -> String {
        var text = [UInt8]()
        text.reserveCapacity((count + 2) / 3 * 4)
        for byte in base64EncodedData() {
            switch byte {
            case UInt8(ascii: "+"): text.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): text.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: text.append(byte)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
}
