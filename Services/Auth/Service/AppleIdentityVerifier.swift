import Crypto
import Foundation
import JWTKit
import Logging
import OrbitCoveInfra

/// What a verified Sign in with Apple identity token says about the user.
package struct AppleIdentity: Sendable, Equatable {
    /// Apple's stable user id (`sub`): the identity. The email is not.
    package var subject: String
    package var email: String?
}

/// Why an identity token was refused. The client sees one code for all of them (a forged
/// token learns nothing); the log names the reason, never the token.
package enum AppleIdentityError: Error, Equatable {
    case malformed
    case unsupportedAlgorithm
    case unknownKey
    case badSignature
    case wrongIssuer
    case wrongAudience
    case expired
    case issuedInTheFuture
    case nonceMismatch
    case keysUnavailable

    var apiError: APIError {
        switch self {
        case .keysUnavailable: .unavailable("Cannot reach Apple to verify the sign-in; try again shortly")
        default: .unauthenticated("IDENTITY_TOKEN_INVALID", "The Apple identity token is not valid")
        }
    }
}

/// Verifies Apple identity tokens: RS256 against Apple's published keys (cached by `kid`,
/// fetched again on an unknown one), issuer, audience among our bundle ids, time claims with
/// a small leeway, and the nonce: the token carries SHA-256 of the raw nonce the app chose.
package struct AppleIdentityVerifier: Sendable {
    package static let issuer = "https://appleid.apple.com"
    package static let leeway: TimeInterval = 60

    private let keys: JWKSKeyCache
    private let audiences: Set<String>

    package init(keys: JWKSKeyCache, audiences: Set<String>) {
        self.keys = keys
        self.audiences = audiences
    }

    package func verify(
        _ token: String, rawNonce: String, now: Date = Date()
    ) async throws(AppleIdentityError)
        -> AppleIdentity
    {
        let claims: AppleIdentityClaims
        do {
            claims = try await keys.verify(token, as: AppleIdentityClaims.self, algorithm: "RS256")
        } catch {
            switch error {
            case .malformed: throw .malformed
            case .unsupportedAlgorithm: throw .unsupportedAlgorithm
            case .unknownKey: throw .unknownKey
            case .keysUnavailable: throw .keysUnavailable
            case .badSignature, .payload: throw .badSignature
            }
        }
        guard claims.iss.value == Self.issuer else { throw .wrongIssuer }
        guard !audiences.isDisjoint(with: claims.aud.value) else { throw .wrongAudience }
        guard claims.exp.value.addingTimeInterval(Self.leeway) >= now else { throw .expired }
        guard claims.iat.value.addingTimeInterval(-Self.leeway) <= now else { throw .issuedInTheFuture }
        let expectedNonce = SHA256.hexDigest(of: rawNonce)
        guard let nonce = claims.nonce, Self.constantTimeEqual(nonce, expectedNonce) else { throw .nonceMismatch }
        return AppleIdentity(subject: claims.sub.value, email: claims.email)
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// The claims of an Apple identity token that we use. Time, issuer, audience and nonce are
/// checked by ``AppleIdentityVerifier``, which knows the expected values and the clock.
struct AppleIdentityClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    var sub: SubjectClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var nonce: String?
    var email: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
