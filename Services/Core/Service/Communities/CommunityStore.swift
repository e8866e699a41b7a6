import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Communities: create, change, delete and restore, each with its audit entry and the
/// message that tells the notifications service, in the transaction that makes the change.
package struct CommunityStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    let logger: Logger

    package init(database: Database, writes: CommunityWrites, logger: Logger) {
        self.database = database
        self.writes = writes
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

    struct Changes: Sendable {
        var name: String?
        var description: Change<String> = .keep
        var icon = PictureChange()
        /// Only the settings the request named, validated: merged into the stored settings by
        /// PostgreSQL, so two admins changing different settings at once both keep their change.
        var settingsPatch: [String: JSONValue]?
        /// `name`, `description`, `settings.timezone`, ...: for the audit entry and the message.
        var fields: [String] = []
    }

    /// Creates the community with its creator as admin, and announces it, in one transaction.
    package func create(_ new: NewCommunity, by userId: UUID, traceparent: String? = nil) async throws -> Community {
        let settingsJSON = String(decoding: try JSONCoding.encoder.encode(new.settings), as: UTF8.self)
        let communityId = UUID.random()
        return try await writes.change(
            in: communityId, by: userId, request: RequestFacts(traceparent: traceparent)
        ) { change, connection in
            change.touched(
                try await connection.changedRows(
                    """
                    INSERT INTO communities (id, name, description, icon_url, created_by, settings)
                    VALUES (\(communityId), \(new.name), \(new.description), \(new.iconUrl), \(userId), \(settingsJSON)::jsonb)
                    RETURNING 1
                    """, logger: logger))
            change.touched(
                try await connection.changedRows(
                    """
                    INSERT INTO members (community_id, user_id, role) VALUES (\(communityId), \(userId), 'admin')
                    RETURNING 1
                    """, logger: logger))
            change.announce(CommunityCreated(communityId: communityId, name: new.name, createdBy: userId))
            guard let record = try await CommunityRecord.load(communityId, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return record.community(role: .admin)
        }
    }

    func update(
        _ granted: CommunityGate.Granted, with changes: Changes, request: RequestFacts
    ) async throws
        -> Community
    {
        let id = granted.communityId
        let settingsJSON = try changes.settingsPatch.map {
            String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self)
        }
        return try await MediaReferences.refusing {
            try await writes.change(in: id, by: granted.userId, request: request) { change, connection in
                try await MediaReferences.check(
                    changes.icon, for: .communityIcon, of: id, field: "iconMediaId", on: connection, logger: logger)
                // Deleted meanwhile: nothing changed, nothing to record. Old values on the right:
                // clearing the upload clears the address it wrote, not a URL.
                let touched = try await connection.changedRows(
                    """
                    UPDATE communities SET
                        name = coalesce(\(changes.name), name),
                        description = CASE \(changes.description.tag) WHEN 'keep' THEN description ELSE \(changes.description.value) END,
                        icon_media_id = CASE \(changes.icon.mediaTag) WHEN 'keep' THEN icon_media_id ELSE \(changes.icon.mediaId) END,
                        icon_url = CASE \(changes.icon.urlTag) WHEN 'keep' THEN icon_url
                                   WHEN 'unpicture' THEN CASE WHEN icon_media_id IS NULL THEN icon_url END
                                   ELSE \(changes.icon.url) END,
                        settings = settings || coalesce(\(settingsJSON)::jsonb, '{}'::jsonb),
                        updated_at = NOW()
                    WHERE id = \(id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger)
                guard touched == 1, let record = try await CommunityRecord.load(id, on: connection, logger: logger)
                else {
                    throw CommunityGate.notFound
                }
                change.touched(touched)
                change.invalidatesCache()
                if !changes.fields.isEmpty {
                    change.audit(
                        "community.settings_changed", target: ("community", id),
                        metadata: ["fields": .array(changes.fields.map { .string($0) })])
                    let updated = CommunityUpdated(
                        communityId: id, name: record.name, changes: changes.fields, updatedBy: granted.userId)
                    change.announce(updated)
                    // Its zone and reminder hours move every reminder the community has.
                    if changes.fields.contains(where: { $0.hasPrefix("settings.") }) {
                        change.announce(updated, to: .reminders)
                    }
                }
                return record.community(role: granted.membership.role)
            }
        }
    }

    /// Soft deletion: hidden from every member at once, restorable by an admin for 30 days.
    /// Someone else deleting it first means this one touched nothing and records nothing.
    func delete(_ granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let id = granted.communityId
        try await writes.change(in: id, by: granted.userId, request: request) { change, connection in
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE communities SET deleted_at = NOW(), deleted_by = \(granted.userId)
                    WHERE id = \(id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            change.audit("community.deleted", target: ("community", id))
            change.announce(
                CommunityUpdated(
                    communityId: id, name: granted.record.name, changes: ["deleted"], updatedBy: granted.userId))
            change.invalidatesCache()
        }
    }

    func restore(_ granted: CommunityGate.Granted, request: RequestFacts) async throws -> Community {
        let id = granted.communityId
        return try await writes.change(in: id, by: granted.userId, request: request) { change, connection in
            let restored = try await connection.changedRows(
                """
                UPDATE communities SET deleted_at = NULL, deleted_by = NULL, updated_at = NOW()
                WHERE id = \(id) AND deleted_at > NOW() - \(Retention.communityGrace)::interval
                RETURNING 1
                """, logger: logger)
            guard restored == 1 else {
                throw APIError(
                    .gone, code: "COMMUNITY_NOT_RESTORABLE",
                    message: "This community was deleted more than 30 days ago, or is not deleted")
            }
            change.touched(restored)
            change.audit("community.restored", target: ("community", id))
            change.announce(
                CommunityUpdated(
                    communityId: id, name: granted.record.name, changes: ["restored"], updatedBy: granted.userId))
            change.invalidatesCache()
            guard let record = try await CommunityRecord.load(id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return record.community(role: granted.membership.role)
        }
    }

    /// The caller's communities, most recently joined first.
    func communities(of userId: UUID, page: PageRequest) async throws -> [(Community, PageCursor)] {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: CommunityRecord.columns), m.role::text AS role, m.joined_at, m.id
                FROM members m JOIN communities c ON c.id = m.community_id
                WHERE m.user_id = \(userId) AND m.left_at IS NULL AND c.deleted_at IS NULL
                \(page: page, in: Self.joinedOrder)
                """, logger: logger)
            var communities: [(Community, PageCursor)] = []
            for try await row in rows {
                var cells = RowReader(row)
                let record = try CommunityRecord.read(&cells)
                let role: String = try cells.next("role")
                let joinedAt: Date = try cells.next("joined_at")
                let membershipId: UUID = try cells.next("id")
                communities.append(
                    (
                        record.community(role: MemberRole(rawValue: role) ?? .member),
                        PageCursor(createdAt: joinedAt, id: membershipId)
                    ))
            }
            return communities
        }
    }

    static let joinedOrder = Keyset(.newestFirst, time: "m.joined_at", id: "m.id")
}
