import Foundation
import JWTKit
import OrbitCoveModels

/// The claims of an OrbitCove access token (ES256, 15 minutes).
package struct AccessTokenClaims: JWTPayload, Equatable {
    package var iss: IssuerClaim
    package var aud: AudienceClaim
    package var sub: SubjectClaim
    package var iat: IssuedAtClaim
    package var exp: ExpirationClaim
    package var jti: IDClaim
    /// Never issued by auth; honoured if present (RFC 7519, 4.1.5).
    package var nbf: NotBeforeClaim?

    package init(issuer: String, audience: String, userId: UUID, issuedAt: Date, lifetime: TimeInterval) {
        self.iss = IssuerClaim(value: issuer)
        self.aud = AudienceClaim(value: [audience])
        self.sub = SubjectClaim(value: userId.lowercasedString)
        // Whole seconds: NumericDate may carry fractions, but not every JWT library accepts them.
        let issued = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        self.iat = IssuedAtClaim(value: issued)
        self.exp = ExpirationClaim(value: issued.addingTimeInterval(lifetime.rounded(.down)))
        self.jti = IDClaim(value: UUID.random().lowercasedString)
    }

    /// Signature aside, what JWTKit checks; issuer and audience are checked by the verifier,
    /// which knows the expected values. A token is refused when it is not yet valid (`nbf`, or
    /// issued in the future) or lives longer than auth ever lets one
    /// (``AccessTokenVerifier/longestLifetime``): only a holder of the signing key could make
    /// such a token, and it would otherwise act for as long as its `exp` says.
    package func verify(using algorithm: some JWTAlgorithm) async throws {
        let now = Date()
        if exp.value.addingTimeInterval(AccessTokenVerifier.leeway) < now { throw AccessTokenError.expired }
        let latest = now.addingTimeInterval(AccessTokenVerifier.leeway)
        if iat.value > latest || (nbf.map { $0.value > latest } ?? false) { throw AccessTokenError.notYetValid }
        if exp.value.timeIntervalSince(iat.value) > AccessTokenVerifier.longestLifetime {
            throw AccessTokenError.livesTooLong
        }
    }
}

/// Why a presented access token was refused; each maps to a stable 401 code.
package enum AccessTokenError: Error, Equatable {
    case malformed
    case unsupportedAlgorithm
    case unknownKey
    case badSignature
    case expired
    case notYetValid
    case livesTooLong
    case wrongIssuer
    case wrongAudience
    case keysUnavailable

    package var apiError: APIError {
        switch self {
        case .expired: .unauthenticated("TOKEN_EXPIRED", "The access token has expired; refresh it")
        case .keysUnavailable: .unavailable("Cannot verify tokens right now; try again shortly")
        default: .unauthenticated("TOKEN_INVALID", "The access token is not valid")
        }
    }
}

/// The JOSE header of a compact JWT, read before any key is chosen.
package struct TokenHeader: Decodable, Sendable {
    package var alg: String
    package var kid: String?
    package var typ: String?
    /// Extensions a recipient must understand (RFC 7515, 4.1.11): we understand none, so a
    /// token naming any is refused.
    package var crit: [String]?

    package init(token: String) throws(AccessTokenError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[0])) else {
            throw AccessTokenError.malformed
        }
        guard let header = try? JSONDecoder().decode(TokenHeader.self, from: data), header.crit == nil else {
            throw AccessTokenError.malformed
        }
        self = header
    }
}
