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
    /// The icon's upload when it is one (`iconUrl` is then its address); absent from entries
    /// cached before migration 0042, which decode it as `nil`.
    package var iconMediaId: UUID?
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
            id: id, name: name, description: description, iconUrl: iconUrl, iconMediaId: iconMediaId,
            createdBy: createdBy, memberCount: memberCount, subscriptionStatus: subscriptionStatus, settings: settings,
            role: role, createdAt: createdAt, updatedAt: updatedAt)
    }

    package func membership(of userId: UUID, role: MemberRole) -> Membership {
        Membership(role: role, isCreator: userId == createdBy, creatorIsAdmin: creatorIsAdmin)
    }

    /// The columns ``read(_:)`` reads, from `communities c`: the row, then whether its
    /// creator is still an admin. A constant, written into queries with `\(unescaped:)`; a
    /// query may read more columns after these.
    package static let columns = """
        c.id, c.name, c.description, c.icon_url, c.icon_media_id, c.created_by, c.member_count, c.subscription_status::text,
        c.settings::text, c.created_at, c.updated_at, c.deleted_at,
        EXISTS (SELECT 1 FROM members cm WHERE cm.community_id = c.id AND cm.user_id = c.created_by
                AND cm.left_at IS NULL AND cm.role = 'admin') AS creator_is_admin
        """

    /// The settings `text` holds, from `remembered` when it has decoded that text before (the
    /// gate passes its cache's, ``CommunityCache/settingsTexts``); a text that is not settings
    /// throws `JSONDecoder`'s reason.
    package static func settings(
        _ text: String, remembered: DecodedTexts<CommunitySettings>? = nil
    ) throws -> CommunitySettings {
        if let known = remembered?.value(of: text) { return known }
        return try JSONCoding.decoder.decode(CommunitySettings.self, from: Data(text.utf8))
    }

    /// Reads ``columns`` from `cells`, leaving it at the next column; the settings from
    /// `settingsTexts` if given (``settings(_:remembered:)``).
    package static func read(
        _ cells: inout RowReader, settingsTexts: DecodedTexts<CommunitySettings>? = nil
    ) throws -> CommunityRecord {
        let id: UUID = try cells.next("id")
        let name: String = try cells.next("name")
        let description: String? = try cells.next("description")
        let iconUrl: String? = try cells.next("icon_url")
        let iconMediaId: UUID? = try cells.next("icon_media_id")
        let createdBy: UUID = try cells.next("created_by")
        let memberCount: Int = try cells.next("member_count")
        let subscriptionStatus: String = try cells.next("subscription_status")
        let settings: String = try cells.next("settings")
        return CommunityRecord(
            id: id, name: name, description: description, iconUrl: iconUrl, iconMediaId: iconMediaId,
            createdBy: createdBy,
            memberCount: memberCount, subscriptionStatus: SubscriptionStatus(rawValue: subscriptionStatus) ?? .free,
            settings: try Self.settings(settings, remembered: settingsTexts),
            createdAt: try cells.next("created_at"), updatedAt: try cells.next("updated_at"),
            deletedAt: try cells.next("deleted_at"), creatorIsAdmin: try cells.next("creator_is_admin"))
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
        for try await row in rows {
            var cells = RowReader(row)
            return try read(&cells)
        }
        return nil
    }
}
