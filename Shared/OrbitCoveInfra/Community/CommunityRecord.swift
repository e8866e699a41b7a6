import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// A community row as the core API caches it: the same for every member (the caller's role
/// is added per request).
package struct CommunityRecord: Codable, Sendable, Equatable {
    package var id: UUID
    package var name: String
    package var description: String?
    package var iconUrl: String?
    package var createdBy: UUID
    package var memberCount: Int
    package var subscriptionStatus: SubscriptionStatus
    package var settings: CommunitySettings
    package var createdAt: Date
    package var updatedAt: Date
    package var deletedAt: Date?
    /// Whether the creator is still one of its admins (see ``Membership/creatorIsAdmin``).
    package var creatorIsAdmin: Bool

    package func community(role: MemberRole) -> Community {
        Community(
            id: id, name: name, description: description, iconUrl: iconUrl, createdBy: createdBy,
            memberCount: memberCount, subscriptionStatus: subscriptionStatus, settings: settings, role: role,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    package func membership(of userId: UUID, role: MemberRole) -> Membership {
        Membership(role: role, isCreator: userId == createdBy, creatorIsAdmin: creatorIsAdmin)
    }

    /// The columns ``decode(_:)`` reads, from `communities c`: the row, then whether its
    /// creator is still an admin. A constant, written into queries with `\(unescaped:)`.
    package static let columns = """
        c.id, c.name, c.description, c.icon_url, c.created_by, c.member_count, c.subscription_status::text,
        c.settings::text, c.created_at, c.updated_at, c.deleted_at,
        EXISTS (SELECT 1 FROM members cm WHERE cm.community_id = c.id AND cm.user_id = c.created_by
                AND cm.left_at IS NULL AND cm.role = 'admin')
        """

    package typealias Row = (UUID, String, String?, String?, UUID, Int, String, String, Date, Date, Date?, Bool)

    package static func decode(_ row: Row) throws -> CommunityRecord {
        CommunityRecord(
            id: row.0, name: row.1, description: row.2, iconUrl: row.3, createdBy: row.4, memberCount: row.5,
            subscriptionStatus: SubscriptionStatus(rawValue: row.6) ?? .free,
            settings: try JSONCoding.decoder.decode(CommunitySettings.self, from: Data(row.7.utf8)),
            createdAt: row.8, updatedAt: row.9, deletedAt: row.10, creatorIsAdmin: row.11)
    }
}

extension CommunityRecord {
    /// The community's row as the caller's transaction sees it.
    package static func load(
        _ id: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> CommunityRecord?
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: CommunityRecord.columns) FROM communities c WHERE c.id = \(id)
            """, logger: logger)
        for try await row in rows.decode(CommunityRecord.Row.self) { return try CommunityRecord.decode(row) }
        return nil
    }
}
