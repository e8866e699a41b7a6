import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Users as the auth service creates and updates them, keyed by their sign-in identity.
package struct AuthUserStore: Sendable {
    let logger: Logger

    /// Creates the user for `appleId`, or refreshes the email and (when given) the name of the
    /// existing one. `apple_id` is the identity; the email may be a relay address, and Apple
    /// may leave it out, in which case the one on file stays.
    package func upsert(
        appleId: String, email: String?, displayName: String?, on connection: PostgresConnection
    ) async throws -> User {
        let rows = try await connection.query(
            """
            INSERT INTO users (apple_id, email, display_name)
            VALUES (\(appleId), COALESCE(\(email), ''), COALESCE(\(displayName), 'OrbitCove member'))
            ON CONFLICT (apple_id) DO UPDATE
                SET email = COALESCE(\(email), users.email),
                    display_name = COALESCE(\(displayName), users.display_name),
                    updated_at = NOW()
            RETURNING id, email, display_name, avatar_url, created_at, updated_at
            """, logger: logger)
        for try await row in rows { return try Self.user(row) }
        throw APIError.internalError
    }

    package func find(_ id: UUID, on connection: PostgresConnection) async throws -> User? {
        let rows = try await connection.query(
            """
            SELECT id, email, display_name, avatar_url, created_at, updated_at
            FROM users WHERE id = \(id) AND deleted_at IS NULL
            """, logger: logger)
        for try await row in rows { return try Self.user(row) }
        return nil
    }

    /// A row of `id, email, display_name, avatar_url, created_at, updated_at`.
    private static func user(_ row: PostgresRow) throws -> User {
        var cells = RowReader(row)
        return User(
            id: try cells.next("id"), email: try cells.next("email"), displayName: try cells.next("display_name"),
            avatarUrl: try cells.next("avatar_url"), createdAt: try cells.next("created_at"),
            updatedAt: try cells.next("updated_at"))
    }
}
