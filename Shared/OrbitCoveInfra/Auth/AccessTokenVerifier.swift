import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore

/// Verifies access tokens statelessly against the auth service's published keys. The key set
/// is fetched from the JWKS URL, cached, and fetched again when a token names an unknown `kid`
/// (a key rotation) — at most once per `refetchInterval`, so forged kids cannot hammer auth.
package actor AccessTokenVerifier {
    package static let leeway: TimeInterval = 30

    private let source: KeySource
    private let issuer: String
    private let audience: String
    private let refetchInterval: Duration
    private let maxAge: Duration
    private var keys = JWTKeyCollection()
    private var knownKids: Set<String> = []
    private var lastFetch: ContinuousClock.Instant?
    private let logger: Logger

    /// Where keys come from: the JWKS URL, or (in the auth service itself) a fixed set.
    package enum KeySource: Sendable {
        case url(URL, HTTPClient)
        case fixed(JWKS)
    }

    package init(
        source: KeySource, issuer: String, audience: String, refetchInterval: Duration = .seconds(30),
        maxAge: Duration = .seconds(600), logger: Logger
    ) {
        self.source = source
        self.issuer = issuer
        self.audience = audience
        self.refetchInterval = refetchInterval
        self.maxAge = maxAge
        self.logger = logger
    }

    /// The user id of a valid token.
    package func verify(_ token: String) async throws(AccessTokenError) -> UUID {
        let header = try TokenHeader(token: token)
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm }
        guard let kid = header.kid else { throw .unknownKey }
        try await ensureKey(kid)
        let claims: AccessTokenClaims
        do {
            claims = try await keys.verify(token, as: AccessTokenClaims.self)
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

    /// Loads keys if none are known yet, they are stale, or `kid` is new (rate limited).
    private func ensureKey(_ kid: String) async throws(AccessTokenError) {
        let now = ContinuousClock.now
        let stale = lastFetch.map { now - $0 > maxAge } ?? true
        if knownKids.contains(kid) && !stale { return }
        if let lastFetch, now - lastFetch < refetchInterval, !knownKids.isEmpty {
            guard knownKids.contains(kid) else { throw .unknownKey }
            return
        }
        do {
            try await reload()
        } catch {
            logger.warning("cannot load token keys", metadata: ["error": .string("\(error)")])
            if knownKids.isEmpty { throw .keysUnavailable }
        }
        lastFetch = now
        guard knownKids.contains(kid) else { throw .unknownKey }
    }

    private func reload() async throws {
        let jwks: JWKS
        switch source {
        case .fixed(let fixed):
            jwks = fixed
        case .url(let url, let client):
            var request = HTTPClientRequest(url: url.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: .seconds(5))
            guard response.status == .ok else { throw AccessTokenError.keysUnavailable }
            let body = try await response.body.collect(upTo: 1 << 20)
            jwks = try JSONDecoder().decode(JWKS.self, from: Data(buffer: body))
        }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for jwk in jwks.keys where jwk.algorithm == .es256 {
            try await collection.add(jwk: jwk)
            if let kid = jwk.keyIdentifier?.string { kids.insert(kid) }
        }
        keys = collection
        knownKids = kids
    }
}
