import Crypto
import Foundation
import Synchronization

/// APNs' token-based authentication: an ES256 JWT naming the team (`iss`) and the key
/// (`kid`), signed with the key Apple issued. APNs refuses a token older than an hour and
/// one refreshed more often than every 20 minutes, so one token serves every request for
/// `lifetime` (50 minutes) and is then replaced; a token APNs calls expired is replaced at once.
package final class ProviderToken: Sendable {
    private let key: P256.Signing.PrivateKey
    private let keyId: String
    private let teamId: String
    private let lifetime: TimeInterval
    private let current = Mutex<(token: String, issuedAt: Date)?>(nil)

    package init(key: P256.Signing.PrivateKey, keyId: String, teamId: String, lifetime: TimeInterval = 50 * 60) {
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
        self.lifetime = lifetime
    }

    /// The token to send now.
    package func token(now: Date = Date()) throws -> String {
        try current.withLock { current in
            if let current, now.timeIntervalSince(current.issuedAt) < lifetime { return current.token }
            let fresh = try make(issuedAt: now)
            current = (fresh, now)
            return fresh
        }
    }

    /// APNs said `token` expired or is invalid: the next request signs a new one (unless
    /// another request already did).
    package func discard(_ token: String) {
        current.withLock { current in
            if current?.token == token { current = nil }
        }
    }

    private func make(issuedAt: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyId)"}"#
        let claims = #"{"iss":"\#(teamId)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#
        let input = Self.base64URL(Data(header.utf8)) + "." + Self.base64URL(Data(claims.utf8))
        let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(signature)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
