import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Users as the auth service creates and updates them, keyed by their sign-in identity.
package struct AuthUserStore: Sendable {
    let database: Database
    let logger: Logger

    /// Creates the user for `appleId`, or refreshes the email (and the name, when given) of
    /// the existing one. `apple_id` is the identity; the email may be a relay address.
    package func upsert(appleId: String, email: String, displayName: String?) async throws -> User {
        let rows = try await database.client.query(
            """
            INSERT INTO users (apple_id, email, display_name)
            VALUES (\(appleId), \(email), \(displayName ?? "OrbitCove member"))
            ON CONFLICT (apple_id) DO UPDATE
                SET email = EXCLUDED.email,
                    display_name = COALESCE(\(displayName), users.display_name),
                    updated_at = NOW()
            RETURNING id, email, display_name, avatar_url, created_at, updated_at
            """, logger: logger)
        for try await (id, email, name, avatar, created, updated) in rows.decode(
            (UUID, String, String, String?, Date, Date).self)
        {
            return User(
                id: id, email: email, displayName: name, avatarUrl: avatar, createdAt: created, updatedAt: updated)
        }
        throw APIError.internalError
    }
}
