import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension EventEdit {
    /// A new capacity places the yeses again: a larger one (or none) gives waiting yeses a
    /// place, a smaller one moves confirmed yeses to the waitlist, and each of them is told.
    /// For a series, every answered instance that takes the series' capacity (not one set on
    /// an override).
    mutating func announcePlaces(in event: EventRecord, from old: Int?) async throws {
        guard event.isSeries else {
            let key = InstanceKey(eventId: event.id, recurrenceId: nil)
            return try await announcePlaces(key, from: old, to: event.capacity, summary: event.summary())
        }
        var starts: [Date] = []
        for try await start in try await connection.query(
            """
            SELECT DISTINCT r.recurrence_id FROM rsvps r
            WHERE r.event_id = \(event.id) AND r.status = 'yes' AND r.recurrence_id IS NOT NULL
              AND NOT EXISTS (
                  SELECT 1 FROM events o
                  WHERE o.recurrence_parent_id = r.event_id AND o.recurrence_id = r.recurrence_id
                    AND o.deleted_at IS NULL AND 'capacity' = ANY(o.overridden_fields))
            ORDER BY 1
            """, logger: logger
        ).decode(Date.self) {
            starts.append(start)
        }
        for start in starts {
            try await announcePlaces(
                InstanceKey(eventId: event.id, recurrenceId: start), from: old, to: event.capacity,
                summary: event.generated(at: start).summary(recurrenceId: start, seriesId: event.id))
        }
    }

    mutating func announcePlaces(
        _ key: InstanceKey, from old: Int?, to new: Int?, summary: EventSummary
    ) async throws {
        guard old != new else { return }
        try await announcePlaces(key, capacity: new, summary: summary)
    }

    /// Places the instance's yeses against `new` again, telling each who gains or loses a place.
    mutating func announcePlaces(_ key: InstanceKey, capacity new: Int?, summary: EventSummary) async throws {
        try await RSVPStore.lock(key, on: connection, logger: logger)
        let before = try await RSVPStore.placed(key, on: connection, logger: logger)
        let after = try await RSVPStore.place(key, on: connection, logger: logger)
        for promoted in RSVPStore.promoted(from: before, to: after) {
            change.announce(
                EventWaitlistPromoted(
                    communityId: granted.communityId, communityName: granted.record.name, event: summary,
                    userId: promoted.userId, familyMemberId: promoted.familyMemberId))
        }
        guard let new else { return }
        for moved in RSVPStore.movedToWaitlist(from: before, to: after) {
            change.announce(
                EventMovedToWaitlist(
                    communityId: granted.communityId, communityName: granted.record.name, event: summary,
                    userId: moved.userId, familyMemberId: moved.familyMemberId, capacity: new,
                    changedBy: granted.userId))
        }
    }

    /// `event.updated`, to those who said they would come to an affected instance.
    /// `answered`: those who said yes or maybe, when read before the edit dropped answers.
    mutating func announce(
        _ summary: EventSummary, scope: EditScope?, changes: [String], instances: Range<Date>?, of eventId: UUID,
        answered: [UUID]? = nil
    ) async throws {
        var users = answered ?? []
        if answered == nil { users = try await answeredUsers(of: eventId, in: instances) }
        let updated = EventUpdated(
            communityId: granted.communityId, communityName: granted.record.name, event: summary, scope: scope,
            changes: changes, updatedBy: granted.userId, answeredUserIds: users)
        change.announce(updated)
        change.announce(updated, to: .reminders)
    }

    /// Members whose own answer or a dependant's to the event (instances in `range`) is yes or maybe.
    func answeredUsers(of eventId: UUID, in range: Range<Date>?) async throws -> [UUID] {
        var users: [UUID] = []
        for try await user in try await connection.query(
            """
            SELECT DISTINCT user_id FROM rsvps
            WHERE event_id = \(eventId) AND status <> 'no'
              AND (\(range == nil) OR (recurrence_id >= \(range?.lowerBound ?? .distantPast)
                                       AND recurrence_id < \(range?.upperBound ?? .distantFuture)))
            ORDER BY user_id
            """, logger: logger
        ).decode(UUID.self) {
            users.append(user)
        }
        return users
    }
}
