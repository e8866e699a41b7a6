import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs, JWKs and this API's opaque tokens
/// (cursors, sync tokens, refresh tokens) write bytes: the one encoder and decoder of it here.
extension Data {
    package init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }

    package func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
