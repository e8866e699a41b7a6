import AuthService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Sign in with Apple against a fake issuer speaking the real protocol, refresh token
/// rotation with reuse detection, logout, and rate limits, through the auth service's routes.
@Suite struct AuthSessionTests {
    static func authApp(
        appleKeys: URL? = nil, limits: AuthRateLimits = AuthRateLimits()
    ) async throws -> some ApplicationProtocol {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-auth")
        var values = [
            "ORBITCOVE_AUTH_DEV_LOGIN": "true",
            "ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation,
            "ORBITCOVE_AUTH_APPLE_AUDIENCES": "com.example.other,\(FakeAppleIssuer.bundleId)",
        ]
        if let appleKeys { values["ORBITCOVE_AUTH_APPLE_JWKS_URL"] = appleKeys.absoluteString }
        return runtime.makeApplication(
            try await AuthApplication.parts(runtime: runtime, environment: Environment(values), limits: limits))
    }

    // MARK: Sign in with Apple

    @Test func aValidAppleTokenSignsInAndKeysTheUserOnAppleId() async throws {
        let apple = try await FakeAppleIssuer()
        let subject = "001234.\(UUID().lowercasedString)"
        try await FakeAppleIssuer.serveKeys(apple.jwks) { keysURL in
            try await Self.authApp(appleKeys: keysURL).test(.router) { client in
                let ip = TestEnvironment.uniqueClientAddress()
                let first = try await appleSignIn(
                    client,
                    token: try await apple.identityToken(
                        subject: subject, email: "x1@privaterelay.appleid.com", rawNonce: "n-1"),
                    nonce: "n-1",
                    extra: #","fullName":{"givenName":"Ada","familyName":"Lovelace"},"deviceName":"iPhone""#,
                    ip: ip)
                #expect(first.status == .ok)
                let session = try #require(first.session)
                #expect(session.user.displayName == "Ada Lovelace")
                #expect(session.user.email == "x1@privaterelay.appleid.com")
                #expect(session.refreshToken.hasPrefix("ocr_") && session.refreshToken.count == 47)
                #expect(session.expiresIn == 900 && session.refreshTokenExpiresIn == 30 * 24 * 3600)

                // Apple leaves the name out after the first sign-in, and the relay address may change.
                let second = try await appleSignIn(
                    client,
                    token: try await apple.identityToken(
                        subject: subject, email: "x2@privaterelay.appleid.com", rawNonce: "n-2"),
                    nonce: "n-2", ip: ip)
                let again = try #require(second.session)
                #expect(again.user.id == session.user.id)
                #expect(again.user.displayName == "Ada Lovelace")
                #expect(again.user.email == "x2@privaterelay.appleid.com")
                #expect(again.refreshToken != session.refreshToken)

                try await withTestDatabase { database in
                    let signIns = try await count(
                        "SELECT count(*)::int FROM audit_log WHERE user_id = \(session.user.id) AND action = 'auth.sign_in'",
                        in: database)
                    #expect(signIns == 2)
                }
            }
        }
    }

    enum BadToken: String, CaseIterable, Sendable {
        case foreignSignature, wrongAudience, wrongIssuer, expired, issuedInTheFuture, wrongNonce, unknownKey, unsigned
    }

    @Test(arguments: BadToken.allCases)
    func aBadAppleTokenIsRefused(_ bad: BadToken) async throws {
        let apple = try await FakeAppleIssuer()
        let subject = "001234.\(UUID().lowercasedString)"
        let token: String
        switch bad {
        case .foreignSignature:
            // Same kid, different key: a forger who knows Apple's kid but not its key.
            token = try await FakeAppleIssuer(kid: apple.kid).identityToken(subject: subject, rawNonce: "n")
        case .wrongAudience:
            token = try await apple.identityToken(subject: subject, rawNonce: "n", audience: "com.evil.app")
        case .wrongIssuer:
            token = try await apple.identityToken(subject: subject, rawNonce: "n", issuer: "https://evil.example")
        case .expired:
            token = try await apple.identityToken(
                subject: subject, rawNonce: "n", issuedAt: Date().addingTimeInterval(-7200), lifetime: 600)
        case .issuedInTheFuture:
            token = try await apple.identityToken(
                subject: subject, rawNonce: "n", issuedAt: Date().addingTimeInterval(3600))
        case .wrongNonce:
            token = try await apple.identityToken(subject: subject, rawNonce: "another nonce")
        case .unknownKey:
            token = try await FakeAppleIssuer().identityToken(subject: subject, rawNonce: "n")
        case .unsigned:
            let genuine = try await apple.identityToken(subject: subject, rawNonce: "n")
            let parts = genuine.split(separator: ".")
            let header = Data(#"{"alg":"none","kid":"\#(apple.kid)"}"#.utf8).base64URLEncodedString()
            token = "\(header).\(parts[1])."
        }
        try await FakeAppleIssuer.serveKeys(apple.jwks) { keysURL in
            try await Self.authApp(appleKeys: keysURL).test(.router) { client in
                let result = try await appleSignIn(
                    client, token: token, nonce: "n", ip: TestEnvironment.uniqueClientAddress())
                #expect(result.status == .unauthorized)
                #expect(result.error?.error.code == "IDENTITY_TOKEN_INVALID")
            }
        }
        try await withTestDatabase { database in
            let users = try await count("SELECT count(*)::int FROM users WHERE apple_id = \(subject)", in: database)
            #expect(users == 0)
        }
    }

    @Test func appleKeysThatCannotBeFetchedAreAServiceProblemNotTheClients() async throws {
        let apple = try await FakeAppleIssuer()
        let unreachable = try #require(URL(string: "http://127.0.0.1:\(try freePort())/auth/keys"))
        try await Self.authApp(appleKeys: unreachable).test(.router) { client in
            let result = try await appleSignIn(
                client, token: try await apple.identityToken(subject: "s", rawNonce: "n"), nonce: "n",
                ip: TestEnvironment.uniqueClientAddress())
            #expect(result.status == .serviceUnavailable)
        }
    }

    // MARK: Refresh tokens

    @Test func refreshRotatesAndAReusedTokenRevokesTheFamily() async throws {
        try await Self.authApp().test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            let signedIn = try await devSignIn(client, ip: ip)
            let first = try await refresh(client, signedIn.refreshToken, ip: ip)
            let rotated = try #require(first.session)
            #expect(rotated.refreshToken != signedIn.refreshToken)
            #expect(rotated.user.id == signedIn.user.id)
            let verifier = try await accessTokenVerifier(client)
            #expect(try await verifier.verify(rotated.accessToken) == signedIn.user.id)

            // Moments later the spent token is a client racing itself: it gets a valid answer,
            // with the same successor every time, so no second branch of the family appears.
            let racing = try await refresh(client, signedIn.refreshToken, ip: ip)
            #expect(racing.status == .ok)
            #expect(racing.session?.refreshToken == rotated.refreshToken)
            let again = try await refresh(client, signedIn.refreshToken, ip: ip)
            #expect(again.session?.refreshToken == rotated.refreshToken)
            try await withTestDatabase { database in
                let family = try await count(
                    """
                    SELECT count(*)::int FROM refresh_tokens WHERE family_id =
                        (SELECT family_id FROM refresh_tokens WHERE token_hash = \(RefreshTokens.hash(signedIn.refreshToken)))
                    """, in: database)
                #expect(family == 2)
            }

            // Past the grace window, it can only be a copy: the whole family goes.
            try await withTestDatabase { database in
                try await database.systemQuery(
                    """
                    UPDATE refresh_tokens SET rotated_at = NOW() - INTERVAL '1 minute'
                    WHERE token_hash = \(RefreshTokens.hash(signedIn.refreshToken))
                    """)
            }
            let reused = try await refresh(client, signedIn.refreshToken, ip: ip)
            #expect(reused.status == .unauthorized)
            #expect(reused.error?.error.code == "REFRESH_TOKEN_REUSED")
            let afterTheft = try await refresh(client, rotated.refreshToken, ip: ip)
            #expect(afterTheft.error?.error.code == "REFRESH_TOKEN_REVOKED")
            let racingToken = try #require(racing.session?.refreshToken)
            #expect(try await refresh(client, racingToken, ip: ip).error?.error.code == "REFRESH_TOKEN_REVOKED")

            try await withTestDatabase { database in
                let alerts = try await count(
                    """
                    SELECT count(*)::int FROM audit_log
                    WHERE user_id = \(signedIn.user.id) AND action = 'auth.refresh_token_reused'
                    """, in: database)
                #expect(alerts == 1)
            }
        }
    }

    @Test func concurrentRefreshesWithOneTokenBothSucceed() async throws {
        try await Self.authApp().test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            let signedIn = try await devSignIn(client, ip: ip)
            async let a = refresh(client, signedIn.refreshToken, ip: ip)
            async let b = refresh(client, signedIn.refreshToken, ip: ip)
            let (left, right) = try await (a, b)
            #expect(left.status == .ok && right.status == .ok)
            // Both get the one successor: racing cannot fork the family.
            #expect(left.session?.refreshToken == right.session?.refreshToken)
        }
    }

    @Test func expiredUnknownAndMalformedRefreshTokensAreRefused() async throws {
        try await Self.authApp().test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            let signedIn = try await devSignIn(client, ip: ip)
            try await withTestDatabase { database in
                try await database.systemQuery(
                    """
                    UPDATE refresh_tokens SET expires_at = NOW() - INTERVAL '1 second'
                    WHERE token_hash = \(RefreshTokens.hash(signedIn.refreshToken))
                    """)
            }
            #expect(
                try await refresh(client, signedIn.refreshToken, ip: ip).error?.error.code == "REFRESH_TOKEN_EXPIRED")
            #expect(try await refresh(client, "ocr_nothing", ip: ip).error?.error.code == "REFRESH_TOKEN_INVALID")
            try await client.execute(
                uri: "/api/v1/auth/refresh", method: .post, headers: [.realIP: ip, .contentType: "application/json"],
                body: ByteBuffer(string: #"{"token":"x"}"#)
            ) { response in
                let envelope = try decodeError(response)
                #expect(response.status == .badRequest)
                #expect(envelope.error.code == "VALIDATION_FAILED")
            }
        }
    }

    // MARK: Logout

    @Test func logoutEndsOneSessionAndLogoutAllEndsEveryOne() async throws {
        try await Self.authApp().test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            let email = "multi-\(UUID().uuidString.prefix(8).lowercased())@example.com"
            let phone = try await devSignIn(client, email: email, ip: ip)
            let tablet = try await devSignIn(client, email: email, ip: ip)
            let laptop = try await devSignIn(client, email: email, ip: ip)

            #expect(try await logout(client, phone.refreshToken, ip: ip) == .noContent)
            #expect(try await refresh(client, phone.refreshToken, ip: ip).error?.error.code == "REFRESH_TOKEN_REVOKED")
            #expect(try await logout(client, phone.refreshToken, ip: ip) == .noContent)
            let tabletAgain = try #require(try await refresh(client, tablet.refreshToken, ip: ip).session)

            #expect(try await logout(client, tabletAgain.refreshToken, all: true, ip: ip) == .noContent)
            #expect(try await refresh(client, laptop.refreshToken, ip: ip).error?.error.code == "REFRESH_TOKEN_REVOKED")
            #expect(
                try await refresh(client, tabletAgain.refreshToken, ip: ip).error?.error.code == "REFRESH_TOKEN_REVOKED"
            )
            #expect(try await logout(client, "ocr_unknown", ip: ip) == .unauthorized)

            // Account entries are visible to their own user (row-level security).
            let entries = try await withTestDatabase { database in
                try await database.transaction(userId: phone.user.id) { connection in
                    let rows = try await connection.query(
                        """
                        SELECT action, host(ip_address) FROM audit_log
                        WHERE user_id = \(phone.user.id) AND action LIKE 'auth.logout%' ORDER BY created_at
                        """, logger: TestEnvironment.logger)
                    var entries: [String] = []
                    for try await (action, address) in rows.decode((String, String?).self) {
                        entries.append("\(action)@\(address ?? "-")")
                    }
                    return entries
                }
            }
            #expect(entries == ["auth.logout@\(ip)", "auth.logout_all@\(ip)"])
        }
    }

    /// A token already spent (rotated, past the grace) is a stolen one at logout as at refresh:
    /// its family is revoked and the logout refused, so it cannot end every session of its user
    /// with `all=true` (a hostile probe's: an old token signed the user out everywhere).
    @Test func aSpentTokenCannotLogEverySessionOut() async throws {
        try await Self.authApp().test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            let email = "spent-\(UUID().uuidString.prefix(8).lowercased())@example.com"
            let phone = try await devSignIn(client, email: email, ip: ip)
            let tablet = try await devSignIn(client, email: email, ip: ip)
            let phoneAgain = try #require(try await refresh(client, phone.refreshToken, ip: ip).session)
            try await withTestDatabase { database in
                try await database.transaction(scope: .system) { connection in
                    try await connection.run(
                        """
                        UPDATE refresh_tokens SET rotated_at = rotated_at - interval '1 minute'
                        WHERE user_id = \(phone.user.id) AND rotated_at IS NOT NULL
                        """, logger: TestEnvironment.logger)
                }
            }
            #expect(try await logout(client, phone.refreshToken, all: true, ip: ip) == .unauthorized)
            // The thief's family is ended; the tablet's session is not.
            #expect(
                try await refresh(client, phoneAgain.refreshToken, ip: ip).error?.error.code == "REFRESH_TOKEN_REVOKED")
            #expect(try await refresh(client, tablet.refreshToken, ip: ip).session != nil)
        }
    }

    // MARK: Rate limits and independent verification

    @Test func signInIsRateLimitedPerClientAddress() async throws {
        var limits = AuthRateLimits()
        limits.signInPerIP = RateLimit(
            name: "test-signin-ip-\(UUID().uuidString.prefix(8))", limit: 2, period: .seconds(60))
        try await Self.authApp(limits: limits).test(.router) { client in
            let ip = TestEnvironment.uniqueClientAddress()
            _ = try await devSignIn(client, ip: ip)
            _ = try await devSignIn(client, ip: ip)
            try await client.execute(
                uri: "/api/v1/auth/dev", method: .post, headers: [.realIP: ip, .contentType: "application/json"],
                body: ByteBuffer(string: #"{"email":"limit@example.com","displayName":"L"}"#)
            ) { response in
                let envelope = try decodeError(response)
                #expect(response.status == .tooManyRequests)
                #expect(envelope.error.code == "RATE_LIMITED")
                let retryAfter = try #require(response.headers[.retryAfter].flatMap { Int($0) })
                #expect((1...30).contains(retryAfter))
                #expect(response.headers[.rateLimitLimit] == "2")
                #expect(response.headers[.rateLimitRemaining] == "0")
                #expect(response.headers[.rateLimitReset] != nil)
            }
            // Another client is not affected.
            _ = try await devSignIn(client, ip: TestEnvironment.uniqueClientAddress())
        }
    }

    @Test func issuedAccessTokensVerifyWithPyJWTGivenOnlyTheJWKS() async throws {
        try await Self.authApp().test(.router) { client in
            let session = try await devSignIn(client, ip: TestEnvironment.uniqueClientAddress())
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get) { response in
                String(buffer: response.body)
            }
            let script = """
                import json, sys, jwt
                keys = jwt.PyJWKSet.from_json(sys.argv[1])
                kid = jwt.get_unverified_header(sys.argv[2])["kid"]
                key = next(k for k in keys.keys if k.key_id == kid)
                claims = jwt.decode(sys.argv[2], key.key, algorithms=["ES256"], audience="orbitcove-api",
                                    issuer="orbitcove-auth", options={"require": ["exp", "iat", "sub", "jti"]})
                print(claims["sub"])
                """
            let output = String(
                decoding: try await ChildProcess.output(
                    of: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, jwks, session.accessToken]),
                as: UTF8.self)
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == session.user.id.lowercasedString)
        }
    }
}

// MARK: Helpers

private struct Outcome: Sendable {
    var status: HTTPResponse.Status
    var session: SessionResponse?
    var error: ErrorEnvelope?
}

private func outcome(_ response: TestResponse) throws -> Outcome {
    if response.status == .ok {
        return Outcome(status: response.status, session: try decodeData(SessionResponse.self, response))
    }
    return Outcome(status: response.status, error: try? decodeError(response))
}

private func appleSignIn(
    _ client: some TestClientProtocol, token: String, nonce: String, extra: String = "", ip: String
) async throws -> Outcome {
    try await client.execute(
        uri: "/api/v1/auth/apple", method: .post, headers: [.realIP: ip, .contentType: "application/json"],
        body: ByteBuffer(string: #"{"identityToken":"\#(token)","nonce":"\#(nonce)"\#(extra)}"#)
    ) { try outcome($0) }
}

private func devSignIn(
    _ client: some TestClientProtocol, email: String? = nil, ip: String
) async throws -> SessionResponse {
    let address = email ?? "s-\(UUID().uuidString.prefix(8).lowercased())@example.com"
    return try await client.execute(
        uri: "/api/v1/auth/dev", method: .post, headers: [.realIP: ip, .contentType: "application/json"],
        body: ByteBuffer(string: #"{"email":"\#(address)","displayName":"Sam","deviceName":"Test"}"#)
    ) { response in
        try #require(try outcome(response).session)
    }
}

private func refresh(_ client: some TestClientProtocol, _ token: String, ip: String) async throws -> Outcome {
    try await client.execute(
        uri: "/api/v1/auth/refresh", method: .post, headers: [.realIP: ip, .contentType: "application/json"],
        body: ByteBuffer(string: #"{"refreshToken":"\#(token)"}"#)
    ) { try outcome($0) }
}

private func logout(
    _ client: some TestClientProtocol, _ token: String, all: Bool = false, ip: String
) async throws -> HTTPResponse.Status {
    try await client.execute(
        uri: "/api/v1/auth/logout\(all ? "?all=true" : "")", method: .delete,
        headers: [.realIP: ip, .contentType: "application/json"],
        body: ByteBuffer(string: #"{"refreshToken":"\#(token)"}"#)
    ) { $0.status }
}

private func accessTokenVerifier(_ client: some TestClientProtocol) async throws -> AccessTokenVerifier {
    let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get) { response in
        try JSONDecoder().decode(JWKS.self, from: Data(buffer: response.body))
    }
    return AccessTokenVerifier(
        source: .fixed(jwks), issuer: "orbitcove-auth", audience: "orbitcove-api", logger: TestEnvironment.logger)
}
