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
        // An edit that commits between reading the event and placing the answer makes the
        // answer fail with serialization_failure; it is made again on the event as it now is,
        // after a short random pause that grows (edits come in bursts: an organiser fixing a
        // title), and after six such edits in a row the caller hears the event kept changing.
        var attempt = 1
        while true {
            do {
                return try await answerOnce(answer, to: eventId, granted: granted, request: request)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "40001" {
                guard attempt < Self.attempts else { throw CalendarErrors.keptChanging }
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(10 * attempt))))
                attempt += 1
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == Self.noLongerAMember {
                // The answerer left, or was removed, while the answer waited (migration 0059).
                throw CommunityGate.notFound
            } catch let error as PSQLError
                where error.serverInfo?[.sqlState] == "23503" && answer.familyMemberId != nil
                && error.serverInfo?[.constraintName]?.contains("family_member") == true
            {
                // The family member was deleted while the answer waited (migration 0077).
                throw APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member of yours")
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42501" {
                // So was it, when the wall refused the answer first (the row names a dependant
                // who is no longer the guardian's) before the key could.
                if let dependant = answer.familyMemberId,
                    try await !isOwn(dependant, by: granted.userId)
                {
                    throw APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member of yours")
                }
                throw error
            }
        }
    }

    /// Whether `dependant` is `user`'s family member, as committed now (in a transaction of its
    /// own unless `connection` is one of `user`'s).
    private func isOwn(_ dependant: UUID, by user: UUID, on connection: PostgresConnection? = nil) async throws -> Bool
    {
        guard let connection else {
            return try await database.transaction(userId: user) { try await isOwn(dependant, by: user, on: $0) }
        }
        return try await !connection.query(
            "SELECT 1 FROM family_members WHERE id = \(dependant) AND user_id = \(user)", logger: logger
        ).collect().isEmpty
    }

    /// How many times an answer is made before an event that keeps changing under it is said to.
    static let attempts = 6

    /// The SQLSTATE `calendar_answer` fails with when its author is no longer a member.
    static let noLongerAMember = "OCM01"

    private func answerOnce(
        _ answer: Answer, to eventId: UUID, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> EventRSVP {
        let user = granted.userId
        // Not `writes.change`: an answer writes no audit entry and empties no cache, and its
        // messages are its statement's, which is its own transaction (`committingStatement`).
        let rows = try await database.committingStatement(asUser: user) { connection, keyMark in
            let (key, instance, seen) = try await Self.instance(
                eventId, recurrenceId: answer.recurrenceId, in: granted.communityId, events: events, on: connection,
                logger: logger)
            if instance.cancelled { throw CalendarErrors.cancelled }
            if let deadline = instance.rsvpDeadline, Date() > deadline { throw CalendarErrors.rsvpClosed }
            // A party the whole capacity cannot seat would only wait; one a later, lower
            // capacity leaves too large waits without holding up those behind it (0075).
            if answer.status == .yes, let capacity = instance.capacity, 1 + answer.plusOnes > capacity {
                throw CalendarErrors.partyTooLarge(capacity)
            }
            if let dependant = answer.familyMemberId {
                guard try await isOwn(dependant, by: user, on: connection) else {
                    throw APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member of yours")
                }
            }
            let summary = instance.summary(recurrenceId: key.recurrenceId, seriesId: key.eventId)
            // For every other answer whose place changed and that now has one (it waited
            // before), whose it is: the statement adds that. The answer itself tells nobody
            // (organisers read attendance; migration 0065).
            let promoted = try Outbox.Template(
                EventWaitlistPromoted(
                    communityId: granted.communityId, communityName: granted.record.name, event: summary,
                    userId: user, familyMemberId: nil))
            return try AnswerStatement(
                eventId: key.eventId, recurrenceId: key.recurrenceId, userId: user, answer: answer, seen: seen,
                community: granted.communityId, traceparent: request.traceparent, promoted: promoted,
                keyMark: keyMark
            ).query
        }
        // Committed. Any row besides the answer is another answer whose place it changed, and
        // one that got a place has its message in the outbox: the relay sends it now, not at
        // its next poll (woken before the rows are read, whatever reading them does).
        if rows.count > 1 { database.outboxWakeups.wake() }
        // calendar_answer always returns the answer it made.
        guard let mine = try Self.answered(rows).first(where: \.mine) else { throw APIError.internalError }
        return mine.answer
    }

    /// An answer as `calendar_answer` (migration 0026) returns it: the caller's own as it now
    /// stands, or another whose place the caller's answer changed.
    struct Answered {
        var answer: EventRSVP
        var mine: Bool
    }

    /// The rows of ``AnswerStatement``.
    private static func answered(_ rows: [PostgresRow]) throws -> [Answered] {
        var answered: [Answered] = []
        for row in rows {
            var cells = RowReader(row)
            let _: UUID = try cells.next("id")
            let _: UUID = try cells.next("user_id")
            let familyMemberId: UUID? = try cells.next("family_member_id")
            let status: String = try cells.next("status")
            let plusOnes: Int = try cells.next("plus_ones")
            let note: String? = try cells.next("note")
            let respondedAt: Date = try cells.next("responded_at")
            let rsvp = EventRSVP(
                familyMemberId: familyMemberId, status: RSVPStatus(rawValue: status) ?? .no, plusOnes: plusOnes,
                note: note, waitlisted: try cells.next("waitlisted"), respondedAt: respondedAt)
            let _: String? = try cells.next("previous_status")
            answered.append(Answered(answer: rsvp, mine: try cells.next("mine")))
        }
        return answered
    }

    /// Who answered an instance, confirmed yeses and then the waitlist in answer order, then
    /// maybes and noes.
    func attendance(
        of eventId: UUID, recurrenceId: Date?, granted: CommunityGate.Granted
    ) async throws
        -> EventAttendance
    {
        try await database.transaction(userId: granted.userId) { connection in
            let (key, instance, _) = try await Self.instance(
                eventId, recurrenceId: recurrenceId, in: granted.communityId, events: events, on: connection,
                logger: logger)
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

    /// The rows an instance was read from, for `calendar_answer` to check they have not
    /// changed: how many (the series or single event, and the instance's override if it has
    /// one) and their `sequence`s added up.
    struct Seen {
        var rows: Int
        var sequences: Int

        init(_ records: EventRecord...) {
            rows = records.count
            sequences = records.reduce(0) { $0 + $1.sequence }
        }
    }

    /// The instance an answer is for: its key (the series and original start, or the single
    /// event), its record as it stands (cancelled when its series or the instance was), and
    /// the rows it was read from.
    static func instance(
        _ eventId: UUID, recurrenceId: Date?, in community: UUID, events: EventRows, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> (InstanceKey, EventRecord, Seen) {
        let stored = try await events.load(eventId, in: community, on: connection, logger: logger)
        if stored.isSeries, recurrenceId == nil {
            throw APIError.validation(["recurrenceId": "is required for an instance of a recurring series"])
        }
        if !stored.isSeries, !stored.isOverride, recurrenceId != nil { throw CalendarErrors.instanceNotFound }
        let (series, found) = try await events.instance(
            of: stored, recurrenceId: recurrenceId, on: connection, logger: logger)
        guard let series, var instance = found, let start = instance.recurrenceId ?? recurrenceId else {
            return (InstanceKey(eventId: stored.id, recurrenceId: nil), stored, Seen(stored))
        }
        let seen = instance.isOverride ? Seen(series, instance) : Seen(series)
        instance.cancelled = instance.cancelled || series.cancelled || series.exceptionDates.contains(start)
        return (InstanceKey(eventId: series.id, recurrenceId: start), instance, seen)
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

    /// Serialises the answers to one instance (and their places) until the transaction ends
    /// (`calendar_lock_instance`, migration 0026, which names the lock for every caller).
    static func lock(_ key: InstanceKey, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            "SELECT 1 FROM calendar_lock_instance(\(key.eventId), \(key.recurrenceId)::timestamptz)", logger: logger)
    }

    /// Places every yes to the instance against its capacity again (in answer order) and
    /// returns the answers as they now stand. Call under ``lock(_:on:logger:)``.
    static func place(
        _ key: InstanceKey, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> [Placed]
    {
        try await connection.run(
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

/// `calendar_answer_committing` (migration 0082), a transaction of its own: enters as the
/// answerer, marks the request's Idempotency-Key if it has one, and runs
/// `calendar_answer_announced` (0060, 0065): `calendar_answer` (0059) and the outbox rows of the
/// promotions it made. That takes the instance's lock, checks that the event's rows are as read,
/// upserts one answer, places the instance's yeses again and writes a message for each answer it
/// gave a place. PostgreSQL commits as the statement ends
/// (``Database/committingStatement(asUser:_:)``), so the lock is held for PostgreSQL's
/// work alone: a COMMIT's round trip and core's turn to send it ran under it before, and every
/// other answer to the event waited for them.
struct AnswerStatement {
    static let sql = """
        SELECT id, user_id, family_member_id, status, plus_ones, note, responded_at, waitlisted, previous_status, mine,
               key_marked
        FROM calendar_answer_committing($1, $2, $3, $4, $5, $6, $7, $8::rsvp_status, $9::integer, $10, $11::integer,
                                        $12, $13, $14, $15, $16, $17::integer, $18::jsonb)
        """
    var eventId: UUID
    var recurrenceId: Date?
    var userId: UUID
    var answer: RSVPStore.Answer
    var seen: RSVPStore.Seen
    var community: UUID
    var traceparent: String?
    /// `event.waitlist_promoted` as core knows it; the statement adds whose place it is.
    var promoted: Outbox.Template
    /// The request's Idempotency-Key, which the statement marks before it writes.
    var keyMark: Database.KeyMark?

    var query: PostgresQuery {
        get throws { PostgresQuery(unsafeSQL: Self.sql, binds: try bindings()) }
    }

    private func bindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 18)
        bindings.append(keyMark?.owner)
        bindings.append(keyMark?.key)
        bindings.append(keyMark?.claim)
        bindings.append(eventId)
        bindings.append(recurrenceId)
        bindings.append(userId)
        bindings.append(answer.familyMemberId)
        bindings.append(answer.status.rawValue)
        bindings.append(answer.plusOnes)
        bindings.append(answer.note)
        bindings.append(seen.rows)
        bindings.append(seen.sequences)
        bindings.append(community)
        bindings.append(traceparent)
        bindings.append(promoted.queue)
        bindings.append(promoted.type)
        bindings.append(promoted.version)
        bindings.append(promoted.data)
        return bindings
    }
}
