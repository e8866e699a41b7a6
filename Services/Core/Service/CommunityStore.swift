import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Communities as the database holds them, seen by one member.
package struct CommunityStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    package struct NewCommunity: Sendable {
        package var name: String
        package var description: String?
        package var iconUrl: String?
        package var settings: CommunitySettings

        package init(
            name: String, description: String? = nil, iconUrl: String? = nil, settings: CommunitySettings = .default
        ) {
            self.name = name
            self.description = description
            self.iconUrl = iconUrl
            self.settings = settings
        }
    }

    /// Creates the community with its creator as admin, and announces it, in one transaction.
    package func create(_ new: NewCommunity, by userId: UUID, traceparent: String? = nil) async throws -> Community {
        let settingsJSON = String(decoding: try JSONCoding.encoder.encode(new.settings), as: UTF8.self)
        let communityId = UUID()
        return try await database.transaction(userId: userId) { connection in
            try await connection.query(
                """
                INSERT INTO communities (id, name, description, icon_url, created_by, settings)
                VALUES (\(communityId), \(new.name), \(new.description), \(new.iconUrl), \(userId), \(settingsJSON)::jsonb)
                """, logger: logger)
            try await connection.query(
                "INSERT INTO members (community_id, user_id, role) VALUES (\(communityId), \(userId), 'admin')",
                logger: logger)
            let envelope = MessageEnvelope(
                communityId: communityId, actorId: userId,
                data: CommunityCreated(communityId: communityId, name: new.name, createdBy: userId))
            try await Outbox.enqueue(
                envelope, to: .notifications, traceparent: traceparent, on: connection, logger: logger)
            guard let community = try await fetch(communityId, for: userId, on: connection) else {
                throw APIError.internalError
            }
            return community
        }
    }

    /// The community if `userId` is a current member of it, and it is not deleted.
    package func community(_ id: UUID, for userId: UUID) async throws -> Community? {
        try await database.client.withConnection { try await fetch(id, for: userId, on: $0) }
    }

    private func fetch(_ id: UUID, for userId: UUID, on connection: PostgresConnection) async throws -> Community? {
        let rows = try await connection.query(
            """
            SELECT c.id, c.name, c.description, c.icon_url, c.created_by, c.member_count,
                   c.subscription_status::text, c.settings::text, m.role::text, c.created_at, c.updated_at
            FROM communities c
            JOIN members m ON m.community_id = c.id AND m.user_id = \(userId) AND m.left_at IS NULL
            WHERE c.id = \(id) AND c.deleted_at IS NULL
            """, logger: logger)
        for try await row in rows.decode(
            (UUID, String, String?, String?, UUID, Int, String, String, String, Date, Date).self)
        {
            let settings = try JSONCoding.decoder.decode(CommunitySettings.self, from: Data(row.7.utf8))
            return Community(
                id: row.0, name: row.1, description: row.2, iconUrl: row.3, createdBy: row.4, memberCount: row.5,
                subscriptionStatus: SubscriptionStatus(rawValue: row.6) ?? .free, settings: settings,
                role: MemberRole(rawValue: row.8) ?? .member, createdAt: row.9, updatedAt: row.10)
        }
        return nil
    }
}
