import Crypto
import Foundation
import Hummingbird
import JWTKit
import Testing
import _CryptoExtras

/// Stands in for Apple's sign-in service: an RSA key of its own, its JWKS served over real
/// HTTP (by ``serveKeys(_:)``), and identity tokens signed the way Apple signs them.
struct FakeAppleIssuer: Sendable {
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var nonce: String?
        var email: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static let bundleId = "com.orbitcove.tests"
    let kid: String
    let jwks: JWKS
    private let signer: JWTKeyCollection

    init(kid: String = "fake-\(UUID().uuidString.prefix(8))") async throws {
        let backing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try backing.publicKey.getKeyPrimitives()
        self.kid = kid
        self.jwks = JWKS(keys: [
            .rsa(
                .rs256, identifier: JWKIdentifier(string: kid), modulus: primitives.modulus.base64URLEncodedString(),
                exponent: primitives.publicExponent.base64URLEncodedString())
        ])
        self.signer = JWTKeyCollection()
        await signer.add(
            rsa: try Insecure.RSA.PrivateKey(backing: backing), digestAlgorithm: .sha256,
            kid: JWKIdentifier(string: kid))
    }

    /// SHA-256 of the raw nonce, hex, as Apple puts it in the token.
    static func hashedNonce(_ raw: String) -> String {
        SHA256.hexDigest(of: raw)
    }

    func identityToken(
        subject: String, email: String? = nil, rawNonce: String, issuer: String = "https://appleid.apple.com",
        audience: String = Self.bundleId, issuedAt: Date = Date(), lifetime: TimeInterval = 600
    ) async throws -> String {
        let claims = Claims(
            iss: IssuerClaim(value: issuer), aud: AudienceClaim(value: [audience]), sub: SubjectClaim(value: subject),
            iat: IssuedAtClaim(value: issuedAt), exp: ExpirationClaim(value: issuedAt.addingTimeInterval(lifetime)),
            nonce: Self.hashedNonce(rawNonce), email: email)
        return try await signer.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// Runs an HTTP server answering `GET /auth/keys` with `jwks` for the duration of `body`,
    /// and passes it the URL.
    static func serveKeys<Result: Sendable>(
        _ jwks: JWKS, _ body: @Sendable (URL) async throws -> Result
    ) async throws -> Result {
        let router = Router()
        router.get("/auth/keys") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(jwks))))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            let port = try #require(client.port)
            return try await body(try #require(URL(string: "http://127.0.0.1:\(port)/auth/keys")))
        }
    }
}
