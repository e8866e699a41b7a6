import AuthService
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Token issuing in auth and the verification every other service runs.
@Suite struct AccessTokenTests {
    let pem = ES256PrivateKey().pemRepresentation
    let keys: SigningKeys
    let issuer: TokenIssuer
    let verifier: AccessTokenVerifier

    init() async throws {
        keys = try await SigningKeys(pems: [pem])
        issuer = TokenIssuer(keys: keys, issuer: "orbitcove-auth", audience: "orbitcove-api")
        verifier = AccessTokenVerifier(
            source: .fixed(keys.published), issuer: "orbitcove-auth", audience: "orbitcove-api",
            logger: TestEnvironment.logger)
    }

    @Test func aFreshTokenVerifies() async throws {
        let user = UUID()
        let token = try await issuer.accessToken(for: user)
        #expect(try await verifier.verify(token) == user)
        let header = try TokenHeader(token: token)
        #expect(header.alg == "ES256" && header.kid == keys.signerKid)
    }

    @Test func expiredTokensAreRefusedAsExpired() async throws {
        let token = try await issuer.accessToken(for: UUID(), now: Date().addingTimeInterval(-3600))
        await #expect(throws: AccessTokenError.expired) { try await verifier.verify(token) }
        #expect(AccessTokenError.expired.apiError.code == "TOKEN_EXPIRED")
    }

    @Test func tamperedTokensAreRefused() async throws {
        let token = try await issuer.accessToken(for: UUID())
        var parts = token.split(separator: ".").map(String.init)
        let forged =
            #"{"sub":"\#(UUID().lowercasedString)","aud":"orbitcove-api","iss":"orbitcove-auth","iat":1,"exp":9999999999,"jti":"x"}"#
        parts[1] = Data(forged.utf8).base64URLEncodedString()
        await #expect(throws: AccessTokenError.badSignature) { try await verifier.verify(parts.joined(separator: ".")) }
    }

    @Test func unsignedAndSymmetricTokensAreRefused() async throws {
        let payload = Data(
            #"{"sub":"\#(UUID().uuidString)","aud":"orbitcove-api","iss":"orbitcove-auth","exp":9999999999}"#.utf8
        )
        .base64URLEncodedString()
        let none = Data(#"{"alg":"none","kid":"\#(keys.signerKid)"}"#.utf8).base64URLEncodedString()
        await #expect(throws: AccessTokenError.unsupportedAlgorithm) {
            try await verifier.verify("\(none).\(payload).")
        }

        // HS256 keyed with the public key, the classic algorithm-confusion forgery.
        let hsHeader = Data(#"{"alg":"HS256","kid":"\#(keys.signerKid)"}"#.utf8).base64URLEncodedString()
        let secret = SymmetricKey(data: Data(keys.signer.publicKey.pemRepresentation.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(hsHeader).\(payload)".utf8), using: secret)
        let forged = "\(hsHeader).\(payload).\(Data(mac).base64URLEncodedString())"
        await #expect(throws: AccessTokenError.unsupportedAlgorithm) { try await verifier.verify(forged) }
    }

    /// `header` and `claims` as a compact JWS, ES256-signed with the issuer's key.
    func signed(_ header: String, _ claims: String) throws -> String {
        let input = "\(Data(header.utf8).base64URLEncodedString()).\(Data(claims.utf8).base64URLEncodedString())"
        let signature = try P256.Signing.PrivateKey(pemRepresentation: pem).signature(for: Data(input.utf8))
        return "\(input).\(signature.rawRepresentation.base64URLEncodedString())"
    }

    /// What auth never issues is refused even when signed with its key (a hostile probe's, who
    /// had the key: all of these were accepted): a token not yet valid, one living for years,
    /// a header naming extensions we do not understand, a subject with bytes after its UUID.
    @Test func signedTokensOfAShapeAuthNeverIssuesAreRefused() async throws {
        let now = Int(Date().timeIntervalSince1970)
        let user = UUID()
        func claims(
            sub: String = user.lowercasedString, iat: Int = now, exp: Int = now + 900, _ extra: String = ""
        )
            -> String
        {
            #"{"iss":"orbitcove-auth","aud":["orbitcove-api"],"sub":"\#(sub)","#
                + #""iat":\#(iat),"exp":\#(exp),"jti":"j"\#(extra)}"#
        }
        let header = #"{"alg":"ES256","kid":"\#(keys.signerKid)","typ":"JWT"}"#
        // As auth makes them, it verifies: each refusal below is for its one difference.
        #expect(try await verifier.verify(try signed(header, claims())) == user)
        #expect(try await verifier.verify(try signed(header, claims(#","nbf":\#(now - 5)"#))) == user)
        // A clock up to the leeway ahead in auth is forgiven.
        #expect(try await verifier.verify(try signed(header, claims(iat: now + 20, exp: now + 920))) == user)
        for (token, refusal) in [
            (try signed(header, claims(#","nbf":\#(now + 3_600)"#)), AccessTokenError.notYetValid),
            (try signed(header, claims(iat: now + 3_600, exp: now + 4_000)), .notYetValid),
            (try signed(header, claims(exp: now + 10 * 365 * 86_400)), .livesTooLong),
            (try signed(header, claims(sub: user.lowercasedString + "\\u0000junk")), .malformed),
            (try signed(header, claims(sub: user.lowercasedString + " ")), .malformed),
            (try signed(#"{"alg":"ES256","kid":"\#(keys.signerKid)","crit":["exp"]}"#, claims()), .malformed),
        ] {
            await #expect(throws: refusal) { try await verifier.verify(token) }
            #expect(refusal.apiError.code == "TOKEN_INVALID")
        }
    }

    @Test func wrongAudienceOrIssuerIsRefused() async throws {
        let otherAudience = TokenIssuer(keys: keys, issuer: "orbitcove-auth", audience: "someone-else")
        await #expect(throws: AccessTokenError.wrongAudience) {
            try await verifier.verify(try await otherAudience.accessToken(for: UUID()))
        }
        let otherIssuer = TokenIssuer(keys: keys, issuer: "https://evil.example", audience: "orbitcove-api")
        await #expect(throws: AccessTokenError.wrongIssuer) {
            try await verifier.verify(try await otherIssuer.accessToken(for: UUID()))
        }
    }

    @Test func tokensFromAnUnknownKeyAreRefused() async throws {
        let stranger = try await SigningKeys(pems: [ES256PrivateKey().pemRepresentation])
        let token = try await TokenIssuer(keys: stranger, issuer: "orbitcove-auth", audience: "orbitcove-api")
            .accessToken(for: UUID())
        await #expect(throws: AccessTokenError.unknownKey) { try await verifier.verify(token) }
        await #expect(throws: AccessTokenError.malformed) { try await verifier.verify("not-a-token") }
    }

    @Test func rotatedKeysAreBothPublishedAndTheFirstSigns() async throws {
        let old = ES256PrivateKey()
        let new = ES256PrivateKey()
        let rotated = try await SigningKeys(pems: [new.pemRepresentation, old.pemRepresentation])
        #expect(rotated.published.keys.count == 2)
        let oldOnly = try await SigningKeys(pems: [old.pemRepresentation])
        let during = AccessTokenVerifier(
            source: .fixed(rotated.published), issuer: "i", audience: "a", logger: TestEnvironment.logger)
        let oldToken = try await TokenIssuer(keys: oldOnly, issuer: "i", audience: "a").accessToken(for: UUID())
        let newToken = try await TokenIssuer(keys: rotated, issuer: "i", audience: "a").accessToken(for: UUID())
        _ = try await during.verify(oldToken)
        _ = try await during.verify(newToken)
        #expect(try TokenHeader(token: newToken).kid != oldOnly.signerKid)
    }
}

@Suite struct DevSignInTests {
    func app(devLogin: Bool) async throws -> some ApplicationProtocol {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-auth")
        let environment = Environment([
            "ORBITCOVE_AUTH_DEV_LOGIN": devLogin ? "true" : "false",
            "ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation,
        ])
        return runtime.makeApplication(try await AuthApplication.parts(runtime: runtime, environment: environment))
    }

    @Test func signsInCreatesTheUserAndIssuesAVerifiableToken() async throws {
        let email = "dev-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        try await app(devLogin: true).test(.router) { client in
            var jwks: JWKS?
            try await client.execute(uri: "/.well-known/jwks.json", method: .get) { response in
                #expect(response.status == .ok)
                jwks = try JSONDecoder().decode(JWKS.self, from: Data(buffer: response.body))
                // As documented: every key says what it is for and with which algorithm.
                let document = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                let keys = try #require(document?["keys"] as? [[String: Any]])
                #expect(
                    !keys.isEmpty
                        && keys.allSatisfy { $0["use"] as? String == "sig" && $0["alg"] as? String == "ES256" })
            }
            let body = ByteBuffer(string: #"{"email":"\#(email.uppercased())","displayName":"  Dev  "}"#)
            try await client.execute(
                uri: "/api/v1/auth/dev", method: .post, headers: [.contentType: "application/json"], body: body
            ) { response in
                #expect(response.status == .ok)
                let json = try #require(
                    try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                let data = try #require(json["data"] as? [String: Any])
                let user = try #require(data["user"] as? [String: Any])
                #expect(user["email"] as? String == email)
                #expect(user["displayName"] as? String == "Dev")
                #expect(data["expiresIn"] as? Int == 900)
                let token = try #require(data["accessToken"] as? String)
                let verifier = AccessTokenVerifier(
                    source: .fixed(try #require(jwks)), issuer: "orbitcove-auth", audience: "orbitcove-api",
                    logger: TestEnvironment.logger)
                #expect(try await verifier.verify(token).lowercasedString == user["id"] as? String)
            }
        }
    }

    @Test func invalidInputIsRefusedFieldByField() async throws {
        try await app(devLogin: true).test(.router) { client in
            let body = ByteBuffer(string: #"{"email":"nobody","displayName":""}"#)
            try await client.execute(
                uri: "/api/v1/auth/dev", method: .post, headers: [.contentType: "application/json"], body: body
            ) { response in
                #expect(response.status == .badRequest)
                let envelope = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(
                    envelope.error.details["fields"] == [
                        "email": "must be an email address", "displayName": "must be 1 to 100 characters",
                    ])
            }
        }
    }

    @Test func theRouteDoesNotExistUnlessEnabled() async throws {
        try await app(devLogin: false).test(.router) { client in
            let body = ByteBuffer(string: #"{"email":"a@b.co","displayName":"A"}"#)
            try await client.execute(
                uri: "/api/v1/auth/dev", method: .post, headers: [.contentType: "application/json"], body: body
            ) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    /// The document says `email` is an email address: one with spaces around it is not (the
    /// contract run found it trimmed and accepted).
    @Test func anEmailWithSpacesAroundIsRefused() async throws {
        try await app(devLogin: true).test(.router) { client in
            let body = ByteBuffer(string: #"{"email":" ada@example.com","displayName":"Ada"}"#)
            try await client.execute(
                uri: "/api/v1/auth/dev", method: .post, headers: [.contentType: "application/json"], body: body
            ) { response in
                #expect(response.status == .badRequest)
            }
        }
    }
}

/// Addresses that are not addresses, each of which would have become an account of its own (a
/// hostile probe's: a trailing newline, tab or zero-width space, angle brackets, dots in a row).
@Test(arguments: [
    "ada@example.com\n", "ada@example.com\t", "ada@example.com\r\n", "ada@example.com\u{200B}",
    "ad\u{200B}a@example.com", "<ada@example.com>", "ada@example..com", ".ada@example.com", "ada.@example.com",
    "a..da@example.com", "ada@.example.com", "ada@example.com.", "ada@-example.com", "ada@example", "ada@@example.com",
    "ada@exa mple.com", "ada\u{7F}@example.com",
])
func notAnEmailAddress(_ text: String) {
    #expect(!DevSignInRoutes.looksLikeEmail(text))
}

@Test(arguments: ["ada@example.com", "ada.lovelace+club@mail.example.co.uk", "jürgen@bücher.example", "a@b.co"])
func anEmailAddress(_ text: String) {
    #expect(DevSignInRoutes.looksLikeEmail(text))
}

/// Verified tokens are remembered only until they expire, and the memory stays bounded.
@Suite struct VerifiedTokensTests {
    @Test func aRememberedTokenCountsOnlyUntilItExpires() {
        let tokens = VerifiedTokens()
        let (user, now) = (UUID(), Date())
        tokens.remember("a.b.c", userId: user, until: now.addingTimeInterval(60))
        #expect(tokens.userId(for: "a.b.c", at: now) == user)
        #expect(tokens.userId(for: "a.b.d", at: now) == nil)
        #expect(tokens.userId(for: "a.b.c", at: now.addingTimeInterval(61)) == nil)
        // Gone for good: asking at an earlier time again finds nothing.
        #expect(tokens.userId(for: "a.b.c", at: now) == nil)
    }

    @Test func itNeverHoldsMoreThanItsCapacity() {
        let tokens = VerifiedTokens()
        let later = Date().addingTimeInterval(600)
        for index in 0...VerifiedTokens.capacity { tokens.remember("token-\(index)", userId: UUID(), until: later) }
        #expect(tokens.userId(for: "token-0", at: Date()) == nil)
        #expect(tokens.userId(for: "token-\(VerifiedTokens.capacity)", at: Date()) != nil)
    }
}
