import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A community's shared care reminders and their occurrences as sync sends them (the reminders
/// service writes them; core serves sync): a phone learns that someone walked the dog, or that
/// a reminder was added, without asking. Deleted reminders are in `deleted`, and their
/// occurrences go with them.
enum ReminderSync {
    static func reminders() -> SyncKind {
        SyncKind(
            kind: "reminder", section: "reminders", as: CareReminder.self,
            byId: { community, ids, connection, logger in
                try await read(
                    """
                    SELECT \(unescaped: CareRows.reminderColumns)
                    FROM care_reminders r JOIN communities c ON c.id = r.community_id
                    WHERE r.community_id = \(community) AND r.deleted_at IS NULL AND r.id = ANY(\(ids))
                    ORDER BY r.id
                    """, CareRows.reminder, \.id, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await read(
                    """
                    SELECT \(unescaped: CareRows.reminderColumns)
                    FROM care_reminders r JOIN communities c ON c.id = r.community_id
                    WHERE r.community_id = \(community) AND r.deleted_at IS NULL
                      AND (\(after == nil) OR r.id > \(after ?? .random()))
                    ORDER BY r.id
                    LIMIT \(limit)
                    """, CareRows.reminder, \.id, on: connection, logger: logger)
            })
    }

    static func occurrences() -> SyncKind {
        SyncKind(
            kind: "reminder_occurrence", section: "reminderOccurrences", as: CareOccurrence.self,
            byId: { community, ids, connection, logger in
                try await read(
                    """
                    SELECT \(unescaped: CareRows.occurrenceColumns)
                    FROM care_occurrences o JOIN care_reminders r ON r.id = o.reminder_id
                    WHERE o.community_id = \(community) AND r.deleted_at IS NULL AND o.id = ANY(\(ids))
                    ORDER BY o.id
                    """, CareRows.occurrence, \.id, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await read(
                    """
                    SELECT \(unescaped: CareRows.occurrenceColumns)
                    FROM care_occurrences o JOIN care_reminders r ON r.id = o.reminder_id
                    WHERE o.community_id = \(community) AND r.deleted_at IS NULL
                      AND (\(after == nil) OR o.id > \(after ?? .random()))
                    ORDER BY o.id
                    LIMIT \(limit)
                    """, CareRows.occurrence, \.id, on: connection, logger: logger)
            })
    }

    private static func read<Item>(
        _ query: PostgresQuery, _ decode: (PostgresRow) throws -> Item, _ id: KeyPath<Item, UUID>,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, Item)] {
        var found: [(UUID, Item)] = []
        for try await row in try await connection.query(query, logger: logger) {
            let item = try decode(row)
            found.append((item[keyPath: id], item))
        }
        return found
    }
}
