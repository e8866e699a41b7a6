import Crypto
import Foundation
import JWTKit
import Logging
import OrbitCoveInfra

/// The ES256 keys auth signs access tokens with. The first key signs; every key is published
/// in the JWKS, so a new key can be introduced before the old one stops being trusted.
package struct SigningKeys: Sendable {
    package let signer: ES256PrivateKey
    package let signerKid: String
    package let published: JWKS
    /// What `/.well-known/jwks.json` serves: the same keys with their `use` and `alg`, which
    /// JWTKit's JWK type leaves out and some verifiers require.
    package let document: PublishedKeySet
    package let collection: JWTKeyCollection
    /// Derives a spent refresh token's successor (see ``RefreshTokens``): secret like the
    /// signing key it comes from, and the same on every replica.
    package let successorKey: SymmetricKey

    package init(pems: [String]) async throws {
        let collection = JWTKeyCollection()
        var keys: [(key: ES256PrivateKey, kid: String)] = []
        var jwks: [JWK] = []
        var documented: [PublishedKeySet.Key] = []
        for pem in pems {
            let key = try ES256PrivateKey(pem: pem)
            guard let (x, y) = key.publicKey.parameters else {
                throw ConfigurationError(variable: "signing key", reason: "not P-256")
            }
            let kid = Self.thumbprint(x: x, y: y)
            await collection.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            jwks.append(.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: x, y: y, curve: .p256))
            documented.append(.init(x: x, y: y, kid: kid))
            keys.append((key, kid))
        }
        guard let signing = keys.first else {
            throw ConfigurationError(variable: "ORBITCOVE_AUTH_SIGNING_KEY", reason: "no key")
        }
        self.signer = signing.key
        self.successorKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(signing.key.pemRepresentation.utf8)),
            info: Data("orbitcove refresh token successor v1".utf8), outputByteCount: 32)
        self.signerKid = signing.kid
        self.published = JWKS(keys: jwks)
        self.document = PublishedKeySet(keys: documented)
        self.collection = collection
    }

    /// Keys from `ORBITCOVE_AUTH_SIGNING_KEY` (PEM) or `ORBITCOVE_AUTH_SIGNING_KEY_FILE`, then
    /// `ORBITCOVE_AUTH_EXTRA_PUBLISHED_KEY_FILES` (comma-separated, published but not signing).
    /// Development without a key gets a throwaway one, with a warning.
    package static func load(
        from env: OrbitCoveInfra.Environment, development: Bool, logger: Logger
    ) async throws
        -> SigningKeys
    {
        var pems: [String] = []
        if let pem = env.optionalString("ORBITCOVE_AUTH_SIGNING_KEY") {
            pems.append(pem)
        } else if let path = env.optionalString("ORBITCOVE_AUTH_SIGNING_KEY_FILE") {
            pems.append(try String(contentsOfFile: path, encoding: .utf8))
        } else if development {
            logger.warning("no signing key configured; using a throwaway key, tokens will not survive a restart")
            pems.append(ES256PrivateKey().pemRepresentation)
        }
        for path in env.list("ORBITCOVE_AUTH_EXTRA_PUBLISHED_KEY_FILES", default: []) {
            pems.append(try String(contentsOfFile: path, encoding: .utf8))
        }
        return try await SigningKeys(pems: pems)
    }

    /// RFC 7638 JWK thumbprint: stable for a key, so every replica names it the same.
    static func thumbprint(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Data(SHA256.hash(data: Data(canonical.utf8))).base64URLEncodedString()
    }
}

/// An RFC 7517 key set of P-256 signature keys, as the JWKS endpoint publishes it.
package struct PublishedKeySet: Codable, Sendable, Equatable {
    package struct Key: Codable, Sendable, Equatable {
        var kty = "EC"
        var crv = "P-256"
        var x: String
        var y: String
        var kid: String
        var use = "sig"
        var alg = "ES256"

        init(x: String, y: String, kid: String) {
            self.x = x
            self.y = y
            self.kid = kid
        }
    }

    package var keys: [Key]
}
