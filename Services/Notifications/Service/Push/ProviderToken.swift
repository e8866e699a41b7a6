import Crypto
import Foundation
import JWTKit
import Synchronization

/// APNs' token-based authentication: an ES256 JWT naming the key (`kid`) and the team (`iss`),
/// with the time it was made (`iat`), signed with jwt-kit and the key Apple issued. APNs refuses
/// a token older than an hour and one refreshed more often than every 20 minutes, so one token
/// serves every request for `lifetime` (50 minutes) and is then replaced; a token APNs calls
/// expired is replaced at once.
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
    package func token(now: Date = Date()) async throws -> String {
        if let fresh = current.withLock({ fresh($0, at: now) }) { return fresh }
        let signed = try await sign(issuedAt: now)
        return current.withLock { current in
            // Requests that found no fresh token sign at once; the first to finish is the one
            // every request sends, so APNs sees one new token, not one per request.
            if let fresh = fresh(current, at: now) { return fresh }
            current = (signed, now)
            return signed
        }
    }

    /// APNs said `token` expired or is invalid: the next request signs a new one (unless
    /// another request already did).
    package func discard(_ token: String) {
        current.withLock { current in
            if current?.token == token { current = nil }
        }
    }

    private func fresh(_ current: (token: String, issuedAt: Date)?, at now: Date) -> String? {
        guard let current, now.timeIntervalSince(current.issuedAt) < lifetime else { return nil }
        return current.token
    }

    private func sign(issuedAt: Date) async throws -> String {
        let kid = JWKIdentifier(string: keyId)
        let keys = await JWTKeyCollection().add(ecdsa: try ES256PrivateKey(backing: key), kid: kid)
        // Whole seconds: APNs reads `iat` as an integer.
        let claims = Claims(
            iss: IssuerClaim(value: teamId),
            iat: IssuedAtClaim(value: Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))))
        return try await keys.sign(claims, kid: kid)
    }

    private struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim

        func verify(using algorithm: some JWTAlgorithm) throws {}
    }
}
