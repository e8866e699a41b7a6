import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Answers: one per person (a member or one of their dependants) per instance, until the
/// instance's RSVP deadline. With a capacity, yeses past it wait in answer order; a place
/// that opens goes to the first in line, who is told.
struct RSVPStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    let events: EventRows
    let logger: Logger

    struct Answer {
        var status: RSVPStatus
        var plusOnes: Int
        var note: String?
        var familyMemberId: UUID?
        var recurrenceId: Date?
    }

    func answer(
        _ answer: Answer, to eventId: UUID, granted: CommunityGate.Granted, request: RequestFacts
    )
        async throws -> EventRSVP
    {
        let user = granted.userId
        return try await writes.change(in: granted.communityId, by: user, request: request) { change, connection in
            let (key, _) = try await self.instance(
                eventId, recurrenceId: answer.recurrenceId, in: granted.communityId, on: connection, logger: logger)
            // Under the instance's lock, read it again: an edit that committed meanwhile (a
            // cancellation, a new deadline) counts.
            try await Self.lock(key, on: connection, logger: logger)
            let (_, instance) = try await self.instance(
                eventId, recurrenceId: answer.recurrenceId, in: granted.communityId, on: connection, logger: logger)
            if instance.cancelled { throw CalendarErrors.cancelled }
            if let deadline = instance.rsvpDeadline, Date() > deadline { throw CalendarErrors.rsvpClosed }
            if let dependant = answer.familyMemberId {
                let own = try await connection.query(
                    "SELECT 1 FROM family_members WHERE id = \(dependant) AND user_id = \(user)", logger: logger
                ).collect()
                guard !own.isEmpty else {
                    throw APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member of yours")
                }
            }
            let before = try await Self.placed(key, on: connection, logger: logger)
            let previous = before.first { $0.userId == user && $0.familyMemberId == answer.familyMemberId }
            change.touched(
                try await connection.changedRows(
                    """
                    INSERT INTO rsvps AS r (
                        event_id, recurrence_id, user_id, family_member_id, status, plus_ones, note, responded_at,
                        updated_at, queued_at)
                    VALUES (\(key.eventId), \(key.recurrenceId), \(user), \(answer.familyMemberId),
                            \(answer.status.rawValue)::rsvp_status, \(answer.plusOnes), \(answer.note),
                            clock_timestamp(), clock_timestamp(), clock_timestamp())
                    ON CONFLICT (event_id, recurrence_id, user_id, family_member_id) DO UPDATE SET
                        status = EXCLUDED.status, plus_ones = EXCLUDED.plus_ones, note = EXCLUDED.note,
                        responded_at = clock_timestamp(), updated_at = clock_timestamp(),
                        queued_at = CASE
                            WHEN EXCLUDED.status = 'yes' AND (r.status <> 'yes' OR EXCLUDED.plus_ones > r.plus_ones)
                            THEN clock_timestamp() ELSE r.queued_at END
                    RETURNING 1
                    """, logger: logger))
            let after = try await Self.place(key, on: connection, logger: logger)
            guard let mine = after.first(where: { $0.userId == user && $0.familyMemberId == answer.familyMemberId })
            else { throw APIError.forbidden }
            let summary = instance.summary(recurrenceId: key.recurrenceId, seriesId: key.eventId)
            change.announce(
                EventRSVPChanged(
                    communityId: granted.communityId, event: summary, userId: user,
                    familyMemberId: answer.familyMemberId, status: answer.status, previousStatus: previous?.status,
                    waitlisted: mine.waitlisted))
            for promoted in Self.promoted(from: before, to: after) where promoted.id != mine.id {
                change.announce(
                    EventWaitlistPromoted(
                        communityId: granted.communityId, communityName: granted.record.name, event: summary,
                        userId: promoted.userId, familyMemberId: promoted.familyMemberId))
            }
            return mine.rsvp
        }
    }

    /// Who answered an instance, confirmed yeses and then the waitlist in answer order, then
    /// maybes and noes.
    func attendance(
        of eventId: UUID, recurrenceId: Date?, granted: CommunityGate.Granted
    ) async throws
        -> EventAttendance
    {
        try await database.transaction(userId: granted.userId) { connection in
            let (key, instance) = try await self.instance(
                eventId, recurrenceId: recurrenceId, in: granted.communityId, on: connection, logger: logger)
            let placed = try await Self.placed(key, on: connection, logger: logger)
            func rank(_ answer: Placed) -> Int {
                switch answer.status {
                case .yes: answer.waitlisted ? 1 : 0
                case .maybe: 2
                case .no: 3
                }
            }
            let ordered = placed.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }
            let confirmed = placed.filter { $0.status == .yes && !$0.waitlisted }
            let counts = AttendanceCounts(
                going: confirmed.count, seats: confirmed.reduce(0) { $0 + 1 + $1.plusOnes },
                maybe: placed.count { $0.status == .maybe }, declined: placed.count { $0.status == .no },
                waitlisted: placed.count(where: \.waitlisted), capacity: instance.capacity)
            return EventAttendance(
                eventId: key.eventId, recurrenceId: key.recurrenceId, counts: counts,
                responses: ordered.map { $0.element.entry })
        }
    }

    /// The instance an answer is for: its key (the series and original start, or the single
    /// event) and its record as it stands (cancelled when its series or the instance was).
    private func instance(
        _ eventId: UUID, recurrenceId: Date?, in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> (InstanceKey, EventRecord) {
        let stored = try await events.load(eventId, in: community, on: connection, logger: logger)
        if stored.isSeries, recurrenceId == nil {
            throw APIError.validation(["recurrenceId": "is required for an instance of a recurring series"])
        }
        if !stored.isSeries, !stored.isOverride, recurrenceId != nil { throw CalendarErrors.instanceNotFound }
        let (series, found) = try await events.instance(
            of: stored, recurrenceId: recurrenceId, on: connection, logger: logger)
        guard let series, var instance = found, let start = instance.recurrenceId ?? recurrenceId else {
            return (InstanceKey(eventId: stored.id, recurrenceId: nil), stored)
        }
        instance.cancelled = instance.cancelled || series.cancelled || series.exceptionDates.contains(start)
        return (InstanceKey(eventId: series.id, recurrenceId: start), instance)
    }

    /// One answer with its place: whether a yes waits for a place.
    struct Placed {
        var id: UUID
        var userId: UUID
        var displayName: String
        var familyMemberId: UUID?
        var familyMemberName: String?
        var status: RSVPStatus
        var plusOnes: Int
        var note: String?
        var respondedAt: Date
        var waitlisted: Bool

        var rsvp: EventRSVP {
            EventRSVP(
                familyMemberId: familyMemberId, status: status, plusOnes: plusOnes, note: note, waitlisted: waitlisted,
                respondedAt: respondedAt)
        }

        var entry: AttendanceEntry {
            AttendanceEntry(
                userId: userId, displayName: displayName, familyMemberId: familyMemberId,
                familyMemberName: familyMemberName, status: status, plusOnes: plusOnes, note: note,
                waitlisted: waitlisted, respondedAt: respondedAt)
        }
    }

    /// The answers that waited in `before` and have a place in `after`.
    static func promoted(from before: [Placed], to after: [Placed]) -> [Placed] {
        let waited = Set(before.filter(\.waitlisted).map(\.id))
        return after.filter { waited.contains($0.id) && !$0.waitlisted }
    }

    /// The yeses that had a place in `before` and wait in `after` (a lower capacity).
    static func movedToWaitlist(from before: [Placed], to after: [Placed]) -> [Placed] {
        let confirmed = Set(before.filter { $0.status == .yes && !$0.waitlisted }.map(\.id))
        return after.filter { confirmed.contains($0.id) && $0.waitlisted }
    }

    /// Serialises the answers to one instance (and their places) until the transaction ends.
    static func lock(_ key: InstanceKey, on connection: PostgresConnection, logger: Logger) async throws {
        let name = "rsvp:\(key.eventId.lowercasedString):\(key.recurrenceId?.timeIntervalSince1970 ?? 0)"
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(name), 0))", logger: logger)
    }

    /// Places every yes to the instance against its capacity again (in answer order) and
    /// returns the answers as they now stand. Call under ``lock(_:on:logger:)``.
    static func place(
        _ key: InstanceKey, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> [Placed]
    {
        try await connection.query(
            "SELECT calendar_place_answers(\(key.eventId), \(key.recurrenceId)::timestamptz)", logger: logger)
        return try await placed(key, on: connection, logger: logger)
    }

    /// Every answer to the instance in answer order, with its place.
    static func placed(
        _ key: InstanceKey, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> [Placed]
    {
        var placed: [Placed] = []
        let rows = try await connection.query(
            """
            SELECT r.id, r.user_id, coalesce(u.display_name, 'Former member') AS display_name,
                   r.family_member_id, app_dependant_name(r.family_member_id) AS family_member_name,
                   r.status::text AS status, r.plus_ones, r.note, r.responded_at, r.waitlisted
            FROM rsvps r
            LEFT JOIN users u ON u.id = r.user_id
            WHERE r.event_id = \(key.eventId) AND r.recurrence_id IS NOT DISTINCT FROM \(key.recurrenceId)
            ORDER BY r.queued_at, r.id
            """, logger: logger)
        for try await row in rows {
            var cells = RowReader(row)
            placed.append(
                Placed(
                    id: try cells.next("id"), userId: try cells.next("user_id"),
                    displayName: try cells.next("display_name"), familyMemberId: try cells.next("family_member_id"),
                    familyMemberName: try cells.next("family_member_name"),
                    status: RSVPStatus(rawValue: try cells.next("status")) ?? .no,
                    plusOnes: try cells.next("plus_ones"),
                    note: try cells.next("note"), respondedAt: try cells.next("responded_at"),
                    waitlisted: try cells.next("waitlisted")))
        }
        return placed
    }
}
