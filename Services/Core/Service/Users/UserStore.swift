import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The signed-in user's own account: profile, and deletion with a 7-day grace period.
package struct UserStore: Sendable {
    let database: Database
    let logger: Logger

    package func user(id: UUID) async throws -> User? {
        try await database.transaction(userId: id) { try await Self.user(id, on: $0, logger: logger) }
    }

    /// The changed user, and the communities whose member lists show them.
    func update(_ id: UUID, displayName: String?, avatarUrl: Change<String>) async throws -> (User, [UUID]) {
        try await database.transaction(userId: id) { connection in
            try await connection.query(
                """
                UPDATE users SET
                    display_name = coalesce(\(displayName), display_name),
                    avatar_url = CASE \(avatarUrl.tag) WHEN 'keep' THEN avatar_url ELSE \(avatarUrl.value) END,
                    updated_at = NOW()
                WHERE id = \(id) AND deleted_at IS NULL
                """, logger: logger)
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            var communities: [UUID] = []
            for try await community in try await connection.query(
                "SELECT community_id FROM members WHERE user_id = \(id) AND left_at IS NULL", logger: logger
            ).decode(UUID.self) {
                communities.append(community)
            }
            return (user, communities)
        }
    }

    /// Schedules deletion; asking again keeps the first date.
    func requestDeletion(_ id: UUID, request: RequestFacts) async throws -> User {
        try await database.transaction(userId: id) { connection in
            try await connection.query(
                """
                UPDATE users SET deletion_requested_at = coalesce(deletion_requested_at, NOW())
                WHERE id = \(id) AND deleted_at IS NULL
                """, logger: logger)
            try await AuditLog.record(
                "account.deletion_requested", userId: id, targetType: "user", targetId: id,
                ipAddress: request.clientAddress, on: connection, logger: logger)
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            return user
        }
    }

    func cancelDeletion(_ id: UUID, request: RequestFacts) async throws -> User {
        try await database.transaction(userId: id) { connection in
            try await connection.query(
                "UPDATE users SET deletion_requested_at = NULL WHERE id = \(id) AND deleted_at IS NULL",
                logger: logger)
            try await AuditLog.record(
                "account.deletion_cancelled", userId: id, targetType: "user", targetId: id,
                ipAddress: request.clientAddress, on: connection, logger: logger)
            guard let user = try await Self.user(id, on: connection, logger: logger) else { throw Self.gone }
            return user
        }
    }

    static let gone = APIError.notFound("USER_NOT_FOUND", "This account no longer exists")

    static func user(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> User? {
        let rows = try await connection.query(
            """
            SELECT id, email, display_name, avatar_url,
                   deletion_requested_at + \(Retention.accountGrace)::interval, created_at, updated_at
            FROM users WHERE id = \(id) AND deleted_at IS NULL
            """, logger: logger)
        for try await row in rows.decode((UUID, String, String, String?, Date?, Date, Date).self) {
            return User(
                id: row.0, email: row.1, displayName: row.2, avatarUrl: row.3, deletionScheduledAt: row.4,
                createdAt: row.5, updatedAt: row.6)
        }
        return nil
    }
}
