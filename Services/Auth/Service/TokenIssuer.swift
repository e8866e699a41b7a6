import Foundation
import JWTKit
import OrbitCoveInfra

/// Signs access tokens: ES256, 15 minutes, with `iss`, `aud`, `sub`, `iat`, `exp`, `jti`, `kid`.
package struct TokenIssuer: Sendable {
    package static let accessTokenLifetime: TimeInterval = 15 * 60
    let keys: SigningKeys
    let issuer: String
    let audience: String

    package init(keys: SigningKeys, issuer: String, audience: String) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
    }

    package func accessToken(for userId: UUID, now: Date = Date()) async throws -> String {
        let claims = AccessTokenClaims(
            issuer: issuer, audience: audience, userId: userId, issuedAt: now, lifetime: Self.accessTokenLifetime)
        return try await keys.collection.sign(claims, kid: JWKIdentifier(string: keys.signerKid))
    }
}
