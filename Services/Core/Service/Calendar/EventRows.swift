import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The `events` table for the stores and the editor: rows found by id, a series' overrides and
/// instances, and rows written. Every row read is decoded through `known`, so an unchanged row
/// is decoded once.
package struct EventRows: Sendable {
    let known: KnownEvents

    package init(known: KnownEvents) {
        self.known = known
    }

    func decode(_ row: PostgresRow) throws -> EventRecord {
        try EventRecord(row, known: known)
    }

    /// The event `id` of the community (not deleted), locked for a write when `forUpdate`
    /// (`FOR NO KEY UPDATE`: a new answer's foreign-key check does not wait on it, so an edit
    /// waiting for an instance's answer lock cannot deadlock with that answer).
    func load(
        _ id: UUID, in community: UUID, forUpdate: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> EventRecord {
        if forUpdate {
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: EventRecord.columns) FROM events e
                WHERE e.id = \(id) AND e.community_id = \(community) AND e.deleted_at IS NULL
                FOR NO KEY UPDATE
                """, logger: logger)
            {
                return try decode(row)
            }
        } else {
            // Every answer and event read starts here: prepared once per connection.
            for try await row in try await connection.query(EventRow(id: id, communityId: community), logger: logger) {
                return try decode(row)
            }
        }
        throw CalendarErrors.eventNotFound
    }

    /// The live rows of `ids` in `community`, in no order (those deleted or elsewhere left out).
    func rows(
        _ ids: [UUID], in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [KnownEvent] {
        var rows: [KnownEvent] = []
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: EventRecord.columns) FROM events e
            WHERE e.id = ANY(\(ids)) AND e.community_id = \(community) AND e.deleted_at IS NULL
            """, logger: logger)
        {
            rows.append(try known.event(row))
        }
        return rows
    }

    /// The live overrides of a series, by their instance's original start.
    func overrides(of series: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [EventRecord] {
        var rows: [EventRecord] = []
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: EventRecord.columns) FROM events e
            WHERE e.recurrence_parent_id = \(series) AND e.deleted_at IS NULL ORDER BY e.recurrence_id
            """, logger: logger)
        {
            rows.append(try decode(row))
        }
        return rows
    }

    /// Resolves what a request names: `stored` itself (nil, nil) for a single event or a
    /// whole series; for a series with `recurrenceId`, the series and the instance's record
    /// (its override, or the instance as generated); for an override, its series and itself.
    /// A `recurrenceId` that is not an instance is `404 INSTANCE_NOT_FOUND`.
    func instance(
        of stored: EventRecord, recurrenceId: Date?, on connection: PostgresConnection, logger: Logger
    ) async throws -> (series: EventRecord?, instance: EventRecord?) {
        if stored.isOverride, let parent = stored.parentId, let start = stored.recurrenceId {
            guard recurrenceId == nil || recurrenceId == start else { throw CalendarErrors.instanceNotFound }
            return (try await load(parent, in: stored.communityId, on: connection, logger: logger), stored)
        }
        guard let recurrenceId else { return (nil, nil) }
        guard stored.isSeries, stored.generates(recurrenceId) else { throw CalendarErrors.instanceNotFound }
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: EventRecord.columns) FROM events e
            WHERE e.recurrence_parent_id = \(stored.id) AND e.recurrence_id = \(recurrenceId) AND e.deleted_at IS NULL
            """, logger: logger)
        {
            return (stored, try decode(row))
        }
        return (stored, stored.generated(at: recurrenceId))
    }

    /// Inserts `event`: the rows the insert returned, as stored (none when the second wall
    /// refused), so the caller counts what it touched.
    func insert(_ event: EventRecord, on connection: PostgresConnection, logger: Logger) async throws -> [EventRecord] {
        let attachments = String(decoding: try JSONCoding.encoder.encodeBytes(event.attachments), as: UTF8.self)
        var inserted: [EventRecord] = []
        for try await row in try await connection.query(
            """
            INSERT INTO events AS e (
                id, community_id, created_by, title, description, starts_at, ends_at, all_day, time_zone,
                location_name, location_lat, location_lng, location_address, category, attachments, rsvp_deadline,
                capacity, recurrence_rule, exception_dates, recurrence_parent_id, recurrence_id, recurrence_end,
                overridden_fields, cancelled_at)
            VALUES (
                \(event.id), \(event.communityId), \(event.createdBy), \(event.title), \(event.description),
                \(event.startsAt), \(event.endsAt), \(event.allDay), \(event.timeZone), \(event.locationName),
                \(event.locationLat), \(event.locationLng), \(event.locationAddress),
                \(event.category.rawValue)::event_category, \(attachments)::jsonb, \(event.rsvpDeadline),
                \(event.capacity), \(event.recurrenceRule), \(event.exceptionDates), \(event.parentId),
                \(event.recurrenceId), \(event.recurrenceEnd), \(event.overriddenFields.map(\.rawValue).sorted()),
                CASE WHEN \(event.cancelled) THEN NOW() END)
            RETURNING \(unescaped: EventRecord.columns)
            """, logger: logger)
        {
            inserted.append(try decode(row))
        }
        return inserted
    }

    /// Writes every field of `event` (and deletes it, with `deleted`); the number of rows
    /// written (0 when the second wall refused).
    func save(
        _ event: EventRecord, deleted: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let attachments = String(decoding: try JSONCoding.encoder.encodeBytes(event.attachments), as: UTF8.self)
        return try await connection.changedRows(
            """
            UPDATE events SET
                title = \(event.title), description = \(event.description), starts_at = \(event.startsAt),
                ends_at = \(event.endsAt), all_day = \(event.allDay), location_name = \(event.locationName),
                location_lat = \(event.locationLat), location_lng = \(event.locationLng),
                location_address = \(event.locationAddress), category = \(event.category.rawValue)::event_category,
                attachments = \(attachments)::jsonb, rsvp_deadline = \(event.rsvpDeadline),
                capacity = \(event.capacity), recurrence_rule = \(event.recurrenceRule),
                exception_dates = \(event.exceptionDates), recurrence_parent_id = \(event.parentId),
                recurrence_id = \(event.recurrenceId), recurrence_end = \(event.recurrenceEnd),
                overridden_fields = \(event.overriddenFields.map(\.rawValue).sorted()),
                cancelled_at = CASE WHEN \(event.cancelled) THEN coalesce(cancelled_at, NOW()) END,
                deleted_at = CASE WHEN \(deleted) THEN NOW() END
            WHERE id = \(event.id) AND deleted_at IS NULL
            RETURNING 1
            """, logger: logger)
    }
}

/// One live event of a community, by id.
struct EventRow: PreparedRows {
    static let sql = """
        SELECT \(EventRecord.columns) FROM events e
        WHERE e.id = $1 AND e.community_id = $2 AND e.deleted_at IS NULL
        """
    var id: UUID
    var communityId: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(id)
        bindings.append(communityId)
        return bindings
    }
}
