import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Events as sync sends them: single events, series (with their rules and exceptions) and
/// overrides (with `recurrenceParentId` and `recurrenceId`), as stored; clients expand series
/// themselves. Cancelled events are rows with `cancelled`; deleted ones are in `deleted`. Rows
/// are decoded afresh (the registry is built before the application's ``KnownEvents``; a sync
/// reads each row once anyway).
enum EventSync {
    static func kind() -> SyncKind {
        SyncKind(
            kind: "event", section: "events", as: CalendarEvent.self,
            byId: { community, ids, connection, logger in
                try await events(
                    """
                    SELECT \(unescaped: EventRecord.columns) FROM events e
                    WHERE e.community_id = \(community) AND e.deleted_at IS NULL AND e.id = ANY(\(ids))
                    ORDER BY e.id
                    """, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await events(
                    """
                    SELECT \(unescaped: EventRecord.columns) FROM events e
                    WHERE e.community_id = \(community) AND e.deleted_at IS NULL
                      AND (\(after == nil) OR e.id > \(after ?? .random()))
                    ORDER BY e.id
                    LIMIT \(limit)
                    """, on: connection, logger: logger)
            })
    }

    private static func events(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, CalendarEvent)] {
        var events: [(UUID, CalendarEvent)] = []
        for try await row in try await connection.query(query, logger: logger) {
            let event = try EventRecord(row, known: nil).event
            events.append((event.id, event))
        }
        return events
    }
}
