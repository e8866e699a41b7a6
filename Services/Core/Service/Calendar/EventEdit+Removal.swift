import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension EventEdit {
    /// Deletes a single event or a whole series, or cancels it when someone said they would come.
    mutating func remove(_ event: EventRecord, scope: EditScope?) async throws {
        // The row first: an answer in flight holds it (`calendar_hold_event`, migration 0061)
        // and commits before this reads who answered; an answer after waits for this and
        // finds the event gone. Read first, an answer made meanwhile was lost with a deleted
        // event, or left out of a cancellation's notice.
        try await connection.run("SELECT 1 FROM events WHERE id = \(event.id) FOR UPDATE", logger: logger)
        let answered = try await answeredUsers(of: event.id, in: nil)
        var cancelled = event
        cancelled.cancelled = true
        let deleted = answered.isEmpty
        let written = try await events.save(cancelled, deleted: deleted, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        if deleted, event.isSeries {
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE events SET deleted_at = NOW()
                    WHERE recurrence_parent_id = \(event.id) AND deleted_at IS NULL RETURNING 1
                    """, logger: logger))
        }
        change.audit(
            deleted ? "event.deleted" : "event.cancelled", target: ("event", event.id),
            metadata: ["title": .string(event.title)])
        let removed = EventUpdated(
            communityId: granted.communityId, communityName: granted.record.name, event: event.summary(),
            scope: scope, changes: [deleted ? "deleted" : "cancelled"], updatedBy: granted.userId,
            answeredUserIds: answered)
        change.announce(removed)
        change.announce(removed, to: .reminders)
    }

    /// Deletes one instance of a series: an exception date (and its override goes).
    /// A series keeps at most ``EventInput/maxExceptions`` removed instances.
    mutating func removeInstance(of series: EventRecord, at start: Date) async throws {
        guard series.exceptionDates.count < EventInput.maxExceptions else {
            throw EventInput.unsupported(
                "exceptionDates",
                "the series already has \(EventInput.maxExceptions) removed instances: end it or split it instead")
        }
        let (_, instance) = try await events.instance(
            of: series, recurrenceId: start, on: connection, logger: logger)
        var updated = series
        updated.exceptionDates = Array(Set(series.exceptionDates + [start])).sorted()
        let written = try await events.save(updated, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        if let instance, instance.isOverride {
            change.touched(try await events.save(instance, deleted: true, on: connection, logger: logger))
        }
        let summary = (instance ?? series.generated(at: start)).summary(recurrenceId: start, seriesId: series.id)
        try await announce(
            summary, scope: .this, changes: ["cancelled"], instances: start..<start.addingTimeInterval(1),
            of: series.id)
    }
}
