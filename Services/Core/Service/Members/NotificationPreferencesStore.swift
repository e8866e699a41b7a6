import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A member's own notification settings in one community (`members.notification_prefs`),
/// which the notifications service reads in the statement that writes history.
struct NotificationPreferencesStore: Sendable {
    let database: Database
    let logger: Logger

    func preferences(of userId: UUID, in communityId: UUID) async throws -> NotificationPreferences {
        try await database.transaction(userId: userId) { connection in
            try await Self.read(userId, communityId, lock: false, on: connection, logger: logger)
        }
    }

    /// Applies `change` to the stored settings (locked, so two changes at once both land).
    func update(
        of userId: UUID, in communityId: UUID, _ change: @Sendable (inout NotificationPreferences) -> Void
    ) async throws -> NotificationPreferences {
        try await database.transaction(userId: userId) { connection in
            var preferences = try await Self.read(userId, communityId, lock: true, on: connection, logger: logger)
            let leads = preferences.eventReminderMinutes
            change(&preferences)
            let json = String(decoding: try JSONCoding.encoder.encode(preferences), as: UTF8.self)
            try await connection.run(
                """
                UPDATE members SET notification_prefs = \(json)::jsonb
                WHERE community_id = \(communityId) AND user_id = \(userId) AND left_at IS NULL
                """, logger: logger)
            // New lead times need reminder rows: the reminders service adds them.
            if preferences.eventReminderMinutes != leads {
                let changed = ReminderLeadsChanged(
                    communityId: communityId, userId: userId, minutes: preferences.eventReminderMinutes)
                try await Outbox.enqueue(
                    MessageEnvelope(communityId: communityId, actorId: userId, data: changed), to: .reminders,
                    on: connection, logger: logger)
            }
            return preferences
        }
    }

    /// Which of `ids` name no event of the community (series or single event; an instance is
    /// muted through its series). A deleted event may stay muted: its messages are over anyway.
    func unknownEvents(_ ids: [UUID], in communityId: UUID, asking userId: UUID) async throws -> [UUID] {
        guard !ids.isEmpty else { return [] }
        return try await database.transaction(userId: userId) { connection in
            var known: Set<UUID> = []
            for try await id in try await connection.query(
                """
                SELECT id FROM events
                WHERE id = ANY(\(ids)) AND community_id = \(communityId) AND recurrence_parent_id IS NULL
                """, logger: logger
            ).decode(UUID.self) {
                known.insert(id)
            }
            return ids.filter { !known.contains($0) }
        }
    }

    private static func read(
        _ userId: UUID, _ communityId: UUID, lock: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> NotificationPreferences {
        let rows = try await connection.query(
            """
            SELECT coalesce(notification_prefs, '{}')::text FROM members
            WHERE community_id = \(communityId) AND user_id = \(userId) AND left_at IS NULL
            \(unescaped: lock ? "FOR NO KEY UPDATE" : "")
            """, logger: logger)
        for try await stored in rows.decode(String.self) {
            return (try? JSONCoding.decoder.decode(NotificationPreferences.self, from: Data(stored.utf8))) ?? .defaults
        }
        throw CommunityGate.notFound
    }
}
