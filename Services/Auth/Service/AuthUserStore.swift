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
            RETURNING \(unescaped: UserRows.columns)
            """, logger: logger)
        for try await row in rows { return try UserRows.user(row) }
        throw APIError.internalError
    }

    package func find(_ id: UUID, on connection: PostgresConnection) async throws -> User? {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: UserRows.columns) FROM users WHERE id = \(id) AND deleted_at IS NULL
            """, logger: logger)
        for try await row in rows { return try UserRows.user(row) }
        return nil
    }
}
