import Crypto
import Foundation

/// Checks `authorization: bearer <JWT>` as APNs does on a token-based connection: an ES256 JWT
/// whose header names the signing key (`kid`) and whose claims name the team (`iss`) and the
/// time it was made (`iat`), signed with the team's key.
///
/// The signature is checked once per distinct token (`verdict(for:)`, cached by the caller, as
/// providers reuse a token for up to an hour); expiry is checked on every request (`check`).
struct ProviderTokenCheck: Sendable {
    /// APNs rejects a token whose `iat` is more than an hour old.
    static let lifetime: TimeInterval = 3600
    /// An `iat` this far ahead is a unit mistake (milliseconds), not clock skew: rejected as invalid.
    static let futureLimit: TimeInterval = 86_400

    enum Verdict: Sendable, Hashable {
        case valid(issuedAt: Date)
        case invalid
    }

    let publicKey: P256.Signing.PublicKey
    let teamId: String
    let keyId: String

    /// The token in an `authorization` header, or the rejection APNs gives when there is none.
    static func bearerToken(in authorization: String?) throws(Rejection) -> String {
        guard let authorization, !authorization.isEmpty else { throw .forbidden("MissingProviderToken") }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .forbidden("InvalidProviderToken") }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw .forbidden("MissingProviderToken") }
        return token
    }

    static func check(_ verdict: Verdict, now: Date) throws(Rejection) {
        guard case .valid(let issuedAt) = verdict else { throw .forbidden("InvalidProviderToken") }
        if issuedAt.timeIntervalSince(now) > futureLimit { throw .forbidden("InvalidProviderToken") }
        if now.timeIntervalSince(issuedAt) > lifetime { throw .forbidden("ExpiredProviderToken") }
    }

    func verdict(for token: String) -> Verdict {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Self.base64URLDecoded(parts[0]),
            let claimsBytes = Self.base64URLDecoded(parts[1]),
            let signatureBytes = Self.base64URLDecoded(parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: headerBytes),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsBytes),
            header.alg == "ES256", header.kid == keyId, claims.iss == teamId,
            signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return .invalid }
        return .valid(issuedAt: Date(timeIntervalSince1970: claims.iat))
    }

    private struct Header: Decodable {
        let alg: String
        let kid: String
    }

    private struct Claims: Decodable {
        let iss: String
        let iat: Double
    }

    private static func base64URLDecoded(_ text: Substring) -> Data? {
        guard !text.contains(where: { "+/=".contains($0) }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
