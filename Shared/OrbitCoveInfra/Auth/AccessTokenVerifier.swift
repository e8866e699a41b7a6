import Foundation
import JWTKit
import Logging

/// Verifies access tokens statelessly against the auth service's published ES256 keys
/// (fetched from its JWKS and cached; see ``JWKSKeyCache``).
package struct AccessTokenVerifier: Sendable {
    package static let leeway: TimeInterval = 30

    private let keys: JWKSKeyCache
    private let issuer: String
    private let audience: String

    package typealias KeySource = JWKSKeyCache.Source

    package init(
        source: KeySource, issuer: String, audience: String, refetchInterval: Duration = .seconds(30),
        maxAge: Duration = .seconds(600), logger: Logger
    ) {
        self.keys = JWKSKeyCache(
            source: source, algorithm: .es256, refetchInterval: refetchInterval, maxAge: maxAge, logger: logger)
        self.issuer = issuer
        self.audience = audience
    }

    /// The user id of a valid token.
    package func verify(_ token: String) async throws(AccessTokenError) -> UUID {
        let header = try TokenHeader(token: token)
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm }
        guard let kid = header.kid else { throw .unknownKey }
        let collection: JWTKeyCollection
        do {
            collection = try await keys.keys(including: kid)
        } catch .unknownKey {
            throw .unknownKey
        } catch {
            throw .keysUnavailable
        }
        let claims: AccessTokenClaims
        do {
            claims = try await collection.verify(token, as: AccessTokenClaims.self)
        } catch let error as AccessTokenError {
            throw error
        } catch {
            throw .badSignature
        }
        guard claims.iss.value == issuer else { throw .wrongIssuer }
        guard claims.aud.value.contains(audience) else { throw .wrongAudience }
        guard let userId = UUID(uuidString: claims.sub.value) else { throw .malformed }
        return userId
    }
}
