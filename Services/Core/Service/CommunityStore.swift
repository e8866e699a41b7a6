import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Communities: create, change, delete and restore, each with its audit entry and the
/// message that tells the notifications service, in the transaction that makes the change.
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

    struct Changes: Sendable {
        var name: String?
        var description: Change<String> = .keep
        var iconUrl: Change<String> = .keep
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
            guard let record = try await Self.record(communityId, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return record.community(role: .admin)
        }
    }

    func update(
        _ granted: CommunityAccess.Granted, with changes: Changes, by userId: UUID, request: RequestFacts
    ) async throws -> Community {
        let id = granted.record.id
        let settingsJSON = try changes.settingsPatch.map {
            String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self)
        }
        return try await database.transaction(userId: userId) { connection in
            let updated = try await connection.query(
                """
                UPDATE communities SET
                    name = coalesce(\(changes.name), name),
                    description = CASE \(changes.description.tag) WHEN 'keep' THEN description ELSE \(changes.description.value) END,
                    icon_url = CASE \(changes.iconUrl.tag) WHEN 'keep' THEN icon_url ELSE \(changes.iconUrl.value) END,
                    settings = settings || coalesce(\(settingsJSON)::jsonb, '{}'::jsonb),
                    updated_at = NOW()
                WHERE id = \(id) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            // Deleted meanwhile: nothing changed, nothing to record.
            guard try await updated.collect().count == 1 else { throw CommunityAccess.notFound }
            guard let record = try await Self.record(id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            if !changes.fields.isEmpty {
                try await request.recordChange(
                    "community.settings_changed", by: userId, in: id, target: ("community", id),
                    metadata: ["fields": .array(changes.fields.map { .string($0) })],
                    announcing: CommunityUpdated(
                        communityId: id, name: record.name, changes: changes.fields, updatedBy: userId),
                    on: connection, logger: logger)
            }
            return record.community(role: granted.membership.role)
        }
    }

    /// Soft deletion: hidden from every member at once, restorable by an admin for 30 days.
    func delete(_ granted: CommunityAccess.Granted, by userId: UUID, request: RequestFacts) async throws {
        let id = granted.record.id
        try await database.transaction(userId: userId) { connection in
            let deleted = try await connection.query(
                """
                UPDATE communities SET deleted_at = NOW(), deleted_by = \(userId)
                WHERE id = \(id) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            // Someone else deleted it first: their deletion is the one recorded.
            guard try await deleted.collect().count == 1 else { return }
            try await request.recordChange(
                "community.deleted", by: userId, in: id, target: ("community", id),
                announcing: CommunityUpdated(
                    communityId: id, name: granted.record.name, changes: ["deleted"], updatedBy: userId),
                on: connection, logger: logger)
        }
    }

    func restore(_ granted: CommunityAccess.Granted, by userId: UUID, request: RequestFacts) async throws -> Community {
        let id = granted.record.id
        return try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                UPDATE communities SET deleted_at = NULL, deleted_by = NULL, updated_at = NOW()
                WHERE id = \(id) AND deleted_at > NOW() - \(Retention.communityGrace)::interval
                RETURNING 1
                """, logger: logger)
            var restored = false
            for try await _ in rows { restored = true }
            guard restored else {
                throw APIError(
                    .gone, code: "COMMUNITY_NOT_RESTORABLE",
                    message: "This community was deleted more than 30 days ago, or is not deleted")
            }
            try await request.recordChange(
                "community.restored", by: userId, in: id, target: ("community", id),
                announcing: CommunityUpdated(
                    communityId: id, name: granted.record.name, changes: ["restored"], updatedBy: userId),
                on: connection, logger: logger)
            guard let record = try await Self.record(id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return record.community(role: granted.membership.role)
        }
    }

    /// The caller's communities, most recently joined first.
    func communities(of userId: UUID, after cursor: PageCursor?, limit: Int) async throws -> [(Community, PageCursor)] {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: CommunityRecord.columns), m.role::text, m.joined_at, m.id
                FROM members m JOIN communities c ON c.id = m.community_id
                WHERE m.user_id = \(userId) AND m.left_at IS NULL AND c.deleted_at IS NULL
                  AND (\(cursor == nil) OR (m.joined_at, m.id) < (\(cursor?.exactCreatedAt ?? .unused), \(cursor?.id ?? .random())))
                ORDER BY m.joined_at DESC, m.id DESC
                LIMIT \(limit)
                """, logger: logger)
            var page: [(Community, PageCursor)] = []
            for try await row in rows.decode(
                (UUID, String, String?, String?, UUID, Int, String, String, Date, Date, Date?, Bool, String, Date, UUID)
                    .self)
            {
                let record = try CommunityRecord.decode(
                    (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11))
                let role = MemberRole(rawValue: row.12) ?? .member
                page.append((record.community(role: role), PageCursor(createdAt: row.13, id: row.14)))
            }
            return page
        }
    }

    /// The community's row as the caller's transaction sees it.
    static func record(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> CommunityRecord? {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: CommunityRecord.columns) FROM communities c WHERE c.id = \(id)
            """, logger: logger)
        for try await row in rows.decode(CommunityRecord.Row.self) { return try CommunityRecord.decode(row) }
        return nil
    }
}
