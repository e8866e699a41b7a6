import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore

/// A JSON Web Key Set fetched from a URL (or given), cached, and fetched again when a token
/// names an unknown `kid` (a key rotation) — at most once per `refetchInterval`, so tokens
/// with made-up kids cannot hammer the key server. Only keys of `algorithm` are kept.
package actor JWKSKeyCache {
    /// Where keys come from: a JWKS URL, or a fixed set (the auth service's own keys).
    package enum Source: Sendable {
        case url(URL, HTTPClient)
        case fixed(JWKS)
    }

    package enum Failure: Error, Equatable {
        case unknownKey
        case unavailable
    }

    private let source: Source
    private let algorithm: JWK.Algorithm
    private let refetchInterval: Duration
    private let maxAge: Duration
    private let logger: Logger
    private var keys = JWTKeyCollection()
    private var knownKids: Set<String> = []
    private var lastFetch: ContinuousClock.Instant?

    package init(
        source: Source, algorithm: JWK.Algorithm, refetchInterval: Duration = .seconds(30),
        maxAge: Duration = .seconds(600), logger: Logger
    ) {
        self.source = source
        self.algorithm = algorithm
        self.refetchInterval = refetchInterval
        self.maxAge = maxAge
        self.logger = logger
    }

    /// The keys, once `kid` is among them; loads them if none are known yet, they are stale,
    /// or `kid` is new and the last fetch is long enough ago.
    package func keys(including kid: String) async throws(Failure) -> JWTKeyCollection {
        let now = ContinuousClock.now
        let stale = lastFetch.map { now - $0 > maxAge } ?? true
        if knownKids.contains(kid) && !stale { return keys }
        if let lastFetch, now - lastFetch < refetchInterval, !knownKids.isEmpty {
            guard knownKids.contains(kid) else { throw .unknownKey }
            return keys
        }
        do {
            try await reload()
        } catch {
            logger.warning("cannot load signing keys", metadata: ["error": .string("\(error)")])
            if knownKids.isEmpty { throw .unavailable }
        }
        lastFetch = now
        guard knownKids.contains(kid) else { throw .unknownKey }
        return keys
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
            guard response.status == .ok else { throw Failure.unavailable }
            let body = try await response.body.collect(upTo: 1 << 20)
            jwks = try JSONDecoder().decode(JWKS.self, from: Data(buffer: body))
        }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for jwk in jwks.keys where jwk.algorithm == algorithm {
            guard let kid = jwk.keyIdentifier?.string else { continue }
            try await collection.add(jwk: jwk)
            kids.insert(kid)
        }
        keys = collection
        knownKids = kids
    }
}

/// Why a token failed the checks every JWKS-verified token goes through.
package enum SignedTokenError: Error {
    case malformed
    case unsupportedAlgorithm
    case unknownKey
    case keysUnavailable
    case badSignature
    /// The signature held, but the payload's own checks refused it (an expiry, say).
    case payload(any Error)
}

extension JWKSKeyCache {
    /// The payload of `token`, once its header names `algorithm` and a `kid` of this key set
    /// and its signature verifies. Runs outside the actor, so verifications do not queue.
    package nonisolated func verify<Payload: JWTPayload>(
        _ token: String, as payload: Payload.Type, algorithm: String
    ) async throws(SignedTokenError) -> Payload {
        let header: TokenHeader
        do { header = try TokenHeader(token: token) } catch { throw .malformed }
        guard header.alg == algorithm else { throw .unsupportedAlgorithm }
        guard let kid = header.kid else { throw .unknownKey }
        let collection: JWTKeyCollection
        do {
            collection = try await keys(including: kid)
        } catch .unknownKey {
            throw .unknownKey
        } catch {
            throw .keysUnavailable
        }
        do {
            return try await collection.verify(token, as: Payload.self)
        } catch is JWTError {
            throw .badSignature
        } catch {
            throw .payload(error)
        }
    }
}
