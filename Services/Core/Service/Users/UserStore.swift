import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The signed-in user's own account: profile, and deletion with a 7-day grace period.
package struct UserStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    let logger: Logger

    package func user(id: UUID) async throws -> User? {
        try await database.transaction(userId: id) { try await Self.user(id, on: $0, logger: logger) }
    }

    /// The changed user; the member lists that show them are refreshed after the commit.
    func update(
        _ id: UUID, displayName: String?, avatar: PictureChange, request: RequestFacts
    ) async throws -> User {
        try await MediaReferences.refusing {
            try await change(id, displayName: displayName, avatar: avatar, request: request)
        }
    }

    private func change(
        _ id: UUID, displayName: String?, avatar: PictureChange, request: RequestFacts
    ) async throws -> User {
        try await writes.accountChange(of: id, request: request) { account, connection in
            try await MediaReferences.check(
                avatar, for: .avatar, of: id, field: "avatarMediaId", on: connection, logger: logger)
            // Old values on the right: clearing the upload clears the address it wrote, not a URL.
            account.touched(
                try await connection.changedRows(
                    """
                    UPDATE users SET
                        display_name = coalesce(\(displayName), display_name),
                        avatar_media_id = CASE \(avatar.mediaTag) WHEN 'keep' THEN avatar_media_id ELSE \(avatar.mediaId) END,
                        avatar_url = CASE \(avatar.urlTag) WHEN 'keep' THEN avatar_url
                                     WHEN 'unpicture' THEN CASE WHEN avatar_media_id IS NULL THEN avatar_url END
                                     ELSE \(avatar.url) END,
                        updated_at = NOW()
                    WHERE id = \(id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            account.showsInMemberLists()
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            return user
        }
    }

    /// Schedules deletion; asking again keeps the first date.
    func requestDeletion(_ id: UUID, request: RequestFacts) async throws -> User {
        try await writes.accountChange(of: id, request: request) { account, connection in
            account.touched(
                try await connection.changedRows(
                    """
                    UPDATE users SET deletion_requested_at = coalesce(deletion_requested_at, NOW())
                    WHERE id = \(id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            account.audit("account.deletion_requested")
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            return user
        }
    }

    func cancelDeletion(_ id: UUID, request: RequestFacts) async throws -> User {
        try await writes.accountChange(of: id, request: request) { account, connection in
            account.touched(
                try await connection.changedRows(
                    """
                    UPDATE users SET deletion_requested_at = NULL WHERE id = \(id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            account.audit("account.deletion_cancelled")
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            return user
        }
    }

    static let gone = APIError.notFound("USER_NOT_FOUND", "This account no longer exists")

    static func user(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> User? {
        let rows = try await connection.query(
            "SELECT \(unescaped: UserRows.columns) FROM users WHERE id = \(id) AND deleted_at IS NULL", logger: logger)
        for try await row in rows { return try UserRows.user(row) }
        return nil
    }
}
