import Crypto
import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// Opaque refresh tokens: 256 random bits, stored only as SHA-256 hashes, 30 days, grouped in
/// a family per sign-in. Refreshing spends the presented token and adds its successor to the
/// family. A spent token presented again means it was copied: the family is revoked, unless
/// it was spent moments ago, which is a client racing itself (two requests at once, or a
/// retry after a lost response).
///
/// Inside that grace window the racer gets the *same* successor, not another one: a thief
/// racing the owner must not get a branch of the family of their own, which the owner's next
/// refresh would never expose. The successor is derived from the spent token with a server
/// secret (HMAC), so it can be handed out again without being stored in plain text; without
/// the secret, the spent token says nothing about its successor.
package struct RefreshTokens: Sendable {
    package static let lifetime: TimeInterval = 30 * 24 * 3600
    package static let reuseGrace: TimeInterval = 10
    /// Lets secret scanners recognise a leaked token.
    static let prefix = "ocr_"

    let successorKey: SymmetricKey
    let logger: Logger

    package enum Rotation: Sendable, Equatable {
        case rotated(userId: UUID, familyId: UUID, token: String)
        case unknown
        case expired
        case revoked
        case reused(userId: UUID, familyId: UUID)
    }

    package static func hash(_ token: String) -> String {
        SHA256.hexDigest(of: token)
    }

    static func generate() -> String {
        prefix + Data(randomBytes(32)).base64URLEncodedString()
    }

    /// The successor of `spent`: the same every time it is asked for.
    func successor(of spent: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(spent.utf8), using: successorKey)
        return Self.prefix + Data(mac).base64URLEncodedString()
    }

    /// A new token in `familyId` (a random one for a sign-in, a successor for a refresh).
    func issue(
        userId: UUID, familyId: UUID, deviceName: String?, token: String = Self.generate(),
        on connection: PostgresConnection
    ) async throws -> (id: UUID, token: String) {
        let id = UUID.random()
        try await connection.run(
            """
            INSERT INTO refresh_tokens (id, user_id, token_hash, device_name, expires_at, family_id)
            VALUES (\(id), \(userId), \(Self.hash(token)), \(deviceName),
                    NOW() + make_interval(secs => \(Self.lifetime)), \(familyId))
            """, logger: logger)
        return (id, token)
    }

    /// A refresh token's row as ``rotate(_:on:)`` reads it, by name.
    private struct Found {
        var id: UUID
        var userId: UUID
        var familyId: UUID
        var deviceName: String?
        var expired: Bool
        var revoked: Bool
        var rotated: Bool
        var withinGrace: Bool?

        init(_ row: PostgresRow) throws {
            var cells = RowReader(row)
            (id, userId, familyId) = (try cells.next("id"), try cells.next("user_id"), try cells.next("family_id"))
            deviceName = try cells.next("device_name")
            (expired, revoked, rotated) = (
                try cells.next("expired"), try cells.next("revoked"), try cells.next("rotated")
            )
            withinGrace = try cells.next("within_grace")
        }
    }

    /// Spends `token` and returns its successor, or says why it cannot. The row is locked, so
    /// of two concurrent refreshes the second sees the first's rotation (inside the grace).
    func rotate(_ token: String, on connection: PostgresConnection) async throws -> Rotation {
        let rows = try await connection.query(
            """
            SELECT id, user_id, family_id, device_name, expires_at <= NOW() AS expired,
                   revoked_at IS NOT NULL AS revoked, rotated_at IS NOT NULL AS rotated,
                   rotated_at > NOW() - make_interval(secs => \(Self.reuseGrace)) AS within_grace
            FROM refresh_tokens WHERE token_hash = \(Self.hash(token)) FOR UPDATE
            """, logger: logger)
        var found: Found?
        for try await row in rows { found = try Found(row) }
        guard let found else { return .unknown }
        let (id, userId, familyId, deviceName) = (found.id, found.userId, found.familyId, found.deviceName)
        let (expired, revoked, rotated, withinGrace) = (found.expired, found.revoked, found.rotated, found.withinGrace)
        if revoked { return .revoked }
        if expired { return .expired }
        if rotated && withinGrace != true {
            try await revokeFamily(familyId, reason: "reuse", on: connection)
            return .reused(userId: userId, familyId: familyId)
        }
        let successor = successor(of: token)
        if !rotated {
            let issued = try await issue(
                userId: userId, familyId: familyId, deviceName: deviceName, token: successor, on: connection)
            try await connection.run(
                "UPDATE refresh_tokens SET rotated_at = NOW(), replaced_by = \(issued.id) WHERE id = \(id)",
                logger: logger)
        }
        // Inside the grace window: the successor issued the first time (the row lock above
        // made that one commit first), handed out again.
        return .rotated(userId: userId, familyId: familyId, token: successor)
    }

    /// The owner and family of a token that is still live (not expired, not revoked), and
    /// whether it was spent: rotated longer ago than the reuse grace, so only a thief still
    /// holds it.
    func owner(
        of token: String, on connection: PostgresConnection
    ) async throws
        -> (userId: UUID, familyId: UUID, spent: Bool)?
    {
        let rows = try await connection.query(
            """
            SELECT user_id, family_id,
                   coalesce(rotated_at <= NOW() - make_interval(secs => \(Self.reuseGrace)), false) AS spent
            FROM refresh_tokens
            WHERE token_hash = \(Self.hash(token)) AND revoked_at IS NULL AND expires_at > NOW()
            """, logger: logger)
        for try await (userId, familyId, spent) in rows.decode((UUID, UUID, Bool).self) {
            return (userId, familyId, spent)
        }
        return nil
    }

    /// Whether `token` was ever issued (live, spent, expired or revoked).
    func isKnown(_ token: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = \(Self.hash(token)))", logger: logger)
        for try await known in rows.decode(Bool.self) { return known }
        return false
    }

    func revokeFamily(_ familyId: UUID, reason: String, on connection: PostgresConnection) async throws {
        try await connection.run(
            """
            UPDATE refresh_tokens SET revoked_at = NOW(), revoked_reason = \(reason)
            WHERE family_id = \(familyId) AND revoked_at IS NULL
            """, logger: logger)
    }

    /// Revokes every session of the user; returns how many families were live.
    func revokeAll(userId: UUID, reason: String, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH revoked AS (
                UPDATE refresh_tokens SET revoked_at = NOW(), revoked_reason = \(reason)
                WHERE user_id = \(userId) AND revoked_at IS NULL
                RETURNING family_id
            )
            SELECT count(DISTINCT family_id)::int FROM revoked
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
