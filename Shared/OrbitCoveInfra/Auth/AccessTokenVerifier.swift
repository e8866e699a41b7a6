import Foundation
import JWTKit
import Logging
import Synchronization

/// Verifies access tokens statelessly against the auth service's published ES256 keys
/// (fetched from its JWKS and cached; see ``JWKSKeyCache``).
package struct AccessTokenVerifier: Sendable {
    package static let leeway: TimeInterval = 30
    /// The longest an access token may live, `iat` to `exp`: four times the 15 minutes auth gives one.
    package static let longestLifetime: TimeInterval = 3_600

    private let keys: JWKSKeyCache
    private let issuer: String
    private let audience: String
    private let verified = VerifiedTokens()
    private let logger: Logger

    package typealias KeySource = JWKSKeyCache.Source

    package init(
        source: KeySource, issuer: String, audience: String, refetchInterval: Duration = .seconds(30),
        maxAge: Duration = .seconds(600), logger: Logger
    ) {
        self.keys = JWKSKeyCache(
            source: source, algorithm: .es256, refetchInterval: refetchInterval, maxAge: maxAge, logger: logger)
        self.issuer = issuer
        self.audience = audience
        self.logger = logger
    }

    /// The user id of a valid token.
    package func verify(_ token: String) async throws(AccessTokenError) -> UUID {
        try await verifiedToken(token).userId
    }

    /// The user and expiry of an `Authorization: Bearer <access token>` header's token, or the
    /// refusal a client gets.
    package func verifiedBearer(_ authorization: String) async throws(APIError) -> (userId: UUID, expiresAt: Date) {
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw APIError.unauthenticated("TOKEN_INVALID", "Expected a Bearer access token")
        }
        do {
            return try await verifiedToken(String(authorization.dropFirst(7)))
        } catch {
            throw error.apiError
        }
    }

    /// The user id of a valid token, and when it expires (a realtime stream ends then).
    package func verifiedToken(_ token: String) async throws(AccessTokenError) -> (userId: UUID, expiresAt: Date) {
        if let entry = verified.entry(for: token, at: Date()) { return entry }
        let claims: AccessTokenClaims
        do {
            claims = try await keys.verify(token, as: AccessTokenClaims.self, algorithm: "ES256")
        } catch {
            switch error {
            case .malformed: throw .malformed
            case .unsupportedAlgorithm: throw .unsupportedAlgorithm
            case .unknownKey: throw .unknownKey
            case .keysUnavailable: throw .keysUnavailable
            case .badSignature: throw .badSignature
            case .payload(let refusal):
                let refusal = refusal as? AccessTokenError ?? .badSignature
                if refusal == .notYetValid {
                    // Clients hear only TOKEN_INVALID, and refreshing gets them another such
                    // token: the log is where a clock running ahead in auth shows.
                    logger.warning(
                        "an access token is not valid yet: is the auth service's clock ahead of this one's?",
                        metadata: ["leewaySeconds": "\(Int(Self.leeway))"])
                }
                throw refusal
            }
        }
        guard claims.iss.value == issuer else { throw .wrongIssuer }
        guard claims.aud.value.contains(audience) else { throw .wrongAudience }
        // Exactly a UUID's 36 characters: Foundation's parser stops at a NUL and ignores the rest.
        guard claims.sub.value.utf8.count == 36, let userId = UUID(uuidString: claims.sub.value) else {
            throw .malformed
        }
        verified.remember(token, userId: userId, until: claims.exp.value)
        return (userId, claims.exp.value)
    }
}

/// Tokens this process verified, until they expire. A client sends the same access token with
/// every request of its 15 minutes, and checking its ES256 signature each time was a visible
/// cost. A token is immutable and carries its own expiry, so remembering the outcome changes
/// nothing a client could observe, except that a key withdrawn from the JWKS stops accepting
/// tokens only as they expire (they live 15 minutes). Bounded: when full, it starts afresh.
package final class VerifiedTokens: Sendable {
    package static let capacity = 10_000
    private let entries = Mutex<[String: (userId: UUID, expiresAt: Date)]>([:])

    package init() {}

    package func userId(for token: String, at now: Date) -> UUID? { entry(for: token, at: now)?.userId }

    package func entry(for token: String, at now: Date) -> (userId: UUID, expiresAt: Date)? {
        entries.withLock { entries in
            guard let entry = entries[token] else { return nil }
            guard entry.expiresAt > now else {
                entries[token] = nil
                return nil
            }
            return entry
        }
    }

    package func remember(_ token: String, userId: UUID, until expiresAt: Date) {
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                let now = Date()
                entries = entries.filter { $0.value.expiresAt > now }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[token] = (userId, expiresAt)
        }
    }
}
