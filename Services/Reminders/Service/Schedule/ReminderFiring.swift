import Crypto
import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Fires what is due, exactly once across replicas: a batch of due `reminder_schedule` rows is
/// claimed `FOR UPDATE SKIP LOCKED` (the row locks are the lease: another replica skips them,
/// and a replica that dies mid-batch drops its connection, which rolls the batch back and frees
/// them), each row's reason is checked and its recipients worked out when it fires, and the
/// `reminder.due` messages are written to the outbox in the transaction that marks the rows
/// fired. A message's id is derived from (kind, subject, occurrence, step), and notification
/// rows are unique per (message, user): a recipient hears one reminder once.
struct ReminderFiring: Sendable {
    let database: Database
    let logger: Logger
    /// Rows claimed per transaction.
    var batchSize = 1_000

    struct Claimed: Sendable {
        var id: Int
        var communityId: UUID
        var communityName: String
        var kind: ReminderKind
        var subjectId: UUID
        var occurrence: String
        var step: Int
        var dueAt: Date
        var instanceStart: Date?
    }

    /// What one claimed row turned out to be when it fired.
    struct Fired: Sendable {
        var message: ReminderDue?
        var outcome: String
    }

    /// Fires one batch of what is due by `now` (PostgreSQL's clock); returns how many rows it
    /// claimed (0: nothing was due).
    func fireBatch() async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            let claimed = try await claim(on: connection)
            guard !claimed.isEmpty else { return 0 }
            let firedAt = Date()
            var fired: [Int: Fired] = [:]
            let byKind = Dictionary(grouping: claimed, by: \.kind)
            for (kind, rows) in byKind {
                let reasons = try await reasons(kind, rows, on: connection)
                for row in rows {
                    fired[row.id] = Self.fire(row, reason: reasons[row.id], at: firedAt)
                }
            }
            let messages = claimed.compactMap { fired[$0.id]?.message }.map { message in
                MessageEnvelope(
                    id: Self.messageId(message), occurredAt: firedAt, communityId: message.communityId, actorId: nil,
                    data: message)
            }
            try await Outbox.enqueue(all: messages, to: .notifications, on: connection, logger: logger)
            let ids = claimed.map(\.id)
            let outcomes = claimed.map { fired[$0.id]?.outcome ?? "gone" }
            let counts = claimed.map { fired[$0.id]?.message?.recipients.count ?? 0 }
            try await connection.query(
                """
                UPDATE reminder_schedule s SET fired_at = \(firedAt), outcome = f.outcome, recipients = f.recipients
                FROM unnest(\(ids)::bigint[], \(outcomes)::text[], \(counts)::int[]) AS f(id, outcome, recipients)
                WHERE s.id = f.id
                """, logger: logger)
            return claimed.count
        }
    }

    /// When the next unfired row falls due, if any.
    func nextDue() async throws -> Date? {
        try await database.transaction(scope: .system) { connection in
            for try await due in try await connection.query(
                "SELECT min(due_at) FROM reminder_schedule WHERE fired_at IS NULL", logger: logger
            ).decode(Date?.self) {
                return due
            }
            return nil
        }
    }

    private func claim(on connection: PostgresConnection) async throws -> [Claimed] {
        var claimed: [Claimed] = []
        for try await row in try await connection.query(
            """
            SELECT s.id, s.community_id, c.name, s.kind, s.subject_id, s.occurrence, s.step, s.due_at, s.instance_start
            FROM reminder_schedule s JOIN communities c ON c.id = s.community_id
            WHERE s.fired_at IS NULL AND s.due_at <= now()
            ORDER BY s.due_at
            LIMIT \(batchSize)
            FOR UPDATE OF s SKIP LOCKED
            """, logger: logger)
        {
            var cells = RowReader(row)
            let id: Int = try cells.next("id")
            let community: UUID = try cells.next("community_id")
            let name: String = try cells.next("name")
            let kind: String = try cells.next("kind")
            claimed.append(
                Claimed(
                    id: id, communityId: community, communityName: name,
                    kind: ReminderKind(rawValue: kind) ?? .careDue, subjectId: try cells.next("subject_id"),
                    occurrence: try cells.next("occurrence"), step: try cells.next("step"),
                    dueAt: try cells.next("due_at"), instanceStart: try cells.next("instance_start")))
        }
        return claimed
    }

    /// Why a row fires, found when it fires: its recipients (none: its reason held for nobody),
    /// or no reason at all (the event, dues or occurrence is gone, done or paid).
    struct Reason: Sendable {
        var recipients: [UUID]
        var title: String
        var allDay: Bool? = nil
        var timeZone: String? = nil
        var answers: ReminderDue.Answers? = nil
        var amount: Int64? = nil
        var currency: String? = nil
        var occurrenceId: UUID? = nil
    }

    static func fire(_ row: Claimed, reason: Reason?, at firedAt: Date) -> Fired {
        guard let reason else { return Fired(message: nil, outcome: "gone") }
        guard !reason.recipients.isEmpty else { return Fired(message: nil, outcome: "nobody") }
        var message = ReminderDue(
            kind: row.kind, communityId: row.communityId, communityName: row.communityName, subjectId: row.subjectId,
            occurrence: row.occurrence, step: row.step, recipients: reason.recipients, title: reason.title,
            dueAt: row.dueAt, firedAt: firedAt)
        message.startsAt = row.instanceStart
        message.allDay = reason.allDay
        message.timeZone = reason.timeZone
        message.answers = reason.answers
        message.amount = reason.amount
        message.currency = reason.currency
        message.occurrenceId = reason.occurrenceId
        if row.kind == .eventReminder || row.kind == .rsvpNudge || row.kind == .rsvpSummary {
            message.recurrenceId = ReminderRows.instant(row.occurrence)
        }
        return Fired(message: message, outcome: "sent")
    }

    /// A name-based id (SHA-256 of the row's key, as a version 8 UUID): the same reminder is
    /// always the same message.
    static func messageId(_ message: ReminderDue) -> UUID {
        let key = "\(message.kind.rawValue)|\(message.subjectId.lowercasedString)|\(message.occurrence)|\(message.step)"
        var bytes = Array(SHA256.hash(data: Data(key.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private func reasons(
        _ kind: ReminderKind, _ rows: [Claimed], on connection: PostgresConnection
    ) async throws -> [Int: Reason] {
        let ids = rows.map(\.id)
        var reasons: [Int: Reason] = [:]
        for try await row in try await connection.query(Self.reasonQuery(kind, ids: ids), logger: logger) {
            var cells = RowReader(row)
            let id: Int = try cells.next("id")
            let recipients: [UUID] = try cells.next("recipients")
            var reason = Reason(recipients: recipients, title: try cells.next("title"))
            switch kind {
            case .eventReminder, .rsvpNudge, .rsvpSummary:
                reason.allDay = try cells.next("all_day")
                reason.timeZone = try cells.next("time_zone")
                if kind == .rsvpSummary {
                    let counts: [Int] = try cells.next("answers")
                    if counts.count == 4 {
                        reason.answers = .init(yes: counts[0], no: counts[1], maybe: counts[2], silent: counts[3])
                    }
                }
            case .duesReminder:
                reason.amount = try cells.next("amount")
                reason.currency = try cells.next("currency")
            case .careDue, .careEscalation:
                reason.occurrenceId = try cells.next("occurrence_id")
            }
            reasons[id] = reason
        }
        return reasons
    }

    /// One statement per kind: a row per claimed schedule row whose reason still holds, with
    /// its recipients (current members only) and what the words need.
    static func reasonQuery(_ kind: ReminderKind, ids: [Int]) -> PostgresQuery {
        switch kind {
        case .eventReminder, .rsvpNudge, .rsvpSummary:
            return """
                WITH due AS (
                    SELECT s.id, s.kind, s.step, s.community_id, e.id AS event_id, e.title, e.all_day, e.time_zone,
                           e.created_by, c.settings,
                           CASE WHEN e.recurrence_rule IS NULL THEN NULL ELSE s.occurrence::timestamptz END AS rid
                    FROM reminder_schedule s
                    JOIN events e ON e.id = s.subject_id AND e.deleted_at IS NULL AND e.cancelled_at IS NULL
                    JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
                    WHERE s.id = ANY(\(ids)::bigint[])
                      AND NOT (e.recurrence_rule IS NOT NULL AND s.occurrence::timestamptz = ANY(e.exception_dates))
                      AND NOT EXISTS (
                          SELECT 1 FROM events o
                          WHERE o.recurrence_parent_id = e.id AND o.recurrence_id = s.occurrence::timestamptz
                            AND (o.cancelled_at IS NOT NULL OR o.deleted_at IS NOT NULL))
                )
                SELECT d.id, coalesce(r.recipients, '{}') AS recipients, d.title, d.all_day, d.time_zone,
                       ARRAY[coalesce(a.yes, 0), coalesce(a.no, 0), coalesce(a.maybe, 0), coalesce(a.silent, 0)]
                           AS answers
                FROM due d
                CROSS JOIN LATERAL (
                    SELECT array_agg(m.user_id ORDER BY m.user_id) AS recipients
                    FROM members m
                    WHERE m.community_id = d.community_id AND m.left_at IS NULL
                      AND CASE d.kind
                          WHEN 'event_reminder' THEN
                              d.step = ANY (CASE WHEN jsonb_typeof(m.notification_prefs -> 'eventReminderMinutes') = 'array'
                                                 THEN ARRAY(SELECT jsonb_array_elements_text(
                                                                m.notification_prefs -> 'eventReminderMinutes')::int)
                                                 ELSE ARRAY[nullif(coalesce((d.settings ->> 'defaultReminderHours')::int, 24), 0) * 60]
                                            END)
                              AND NOT EXISTS (
                                  SELECT 1 FROM rsvps a
                                  WHERE a.event_id = d.event_id AND a.recurrence_id IS NOT DISTINCT FROM d.rid
                                    AND a.user_id = m.user_id AND a.family_member_id IS NULL AND a.status = 'no')
                          WHEN 'rsvp_nudge' THEN NOT EXISTS (
                              SELECT 1 FROM rsvps a
                              WHERE a.event_id = d.event_id AND a.recurrence_id IS NOT DISTINCT FROM d.rid
                                AND a.user_id = m.user_id)
                          ELSE m.user_id = d.created_by
                      END
                ) r
                LEFT JOIN LATERAL (
                    SELECT count(*) FILTER (WHERE a.status = 'yes') AS yes, count(*) FILTER (WHERE a.status = 'no') AS no,
                           count(*) FILTER (WHERE a.status = 'maybe') AS maybe,
                           (SELECT count(*) FROM members m
                            WHERE m.community_id = d.community_id AND m.left_at IS NULL
                              AND NOT EXISTS (
                                  SELECT 1 FROM rsvps x
                                  WHERE x.event_id = d.event_id AND x.recurrence_id IS NOT DISTINCT FROM d.rid
                                    AND x.user_id = m.user_id)) AS silent
                    FROM rsvps a
                    WHERE d.kind = 'rsvp_summary' AND a.event_id = d.event_id
                      AND a.recurrence_id IS NOT DISTINCT FROM d.rid
                ) a ON d.kind = 'rsvp_summary'
                """
        case .duesReminder:
            return """
                WITH due AS (
                    SELECT s.id, s.community_id, d.id AS dues_id, d.name, d.currency, d.member_ids,
                           s.occurrence::date AS period,
                           (SELECT a.amount FROM dues_amounts a WHERE a.dues_id = d.id AND a.effective_from <= s.occurrence::date
                            ORDER BY a.effective_from DESC LIMIT 1) AS amount
                    FROM reminder_schedule s
                    JOIN dues d ON d.id = s.subject_id AND d.deleted_at IS NULL AND d.is_active
                    JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
                    WHERE s.id = ANY(\(ids)::bigint[])
                )
                SELECT d.id, coalesce(r.recipients, '{}') AS recipients, d.name AS title,
                       coalesce(d.amount, 0) AS amount, d.currency
                FROM due d
                CROSS JOIN LATERAL (
                    SELECT array_agg(m.user_id ORDER BY m.user_id) AS recipients
                    FROM members m
                    WHERE m.community_id = d.community_id AND m.left_at IS NULL
                      AND (d.member_ids IS NULL OR m.user_id = ANY(d.member_ids))
                      AND NOT EXISTS (SELECT 1 FROM dues_waivers w
                                      WHERE w.dues_id = d.dues_id AND w.period = d.period AND w.user_id = m.user_id)
                      AND coalesce((SELECT sum(p.amount_paid) FROM dues_payments p
                                    WHERE p.dues_id = d.dues_id AND p.period = d.period AND p.user_id = m.user_id), 0)
                          < coalesce(d.amount, 0)
                ) r
                """
        case .careDue, .careEscalation:
            return """
                SELECT s.id,
                       CASE WHEN s.kind = 'care_due' AND assigned.user_id IS NOT NULL THEN ARRAY[assigned.user_id]
                            ELSE coalesce((SELECT array_agg(m.user_id ORDER BY m.user_id) FROM members m
                                           WHERE m.community_id = s.community_id AND m.left_at IS NULL), '{}')
                       END AS recipients,
                       r.title, o.id AS occurrence_id
                FROM reminder_schedule s
                JOIN care_reminders r ON r.id = s.subject_id AND r.deleted_at IS NULL
                JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
                JOIN care_occurrences o ON o.reminder_id = r.id AND o.local_date = s.occurrence::date
                    AND o.status = 'pending'
                LEFT JOIN LATERAL (
                    SELECT m.user_id FROM members m
                    WHERE m.community_id = s.community_id AND m.left_at IS NULL
                      AND m.user_id = coalesce(o.assignee_id, r.assignee_id)
                ) assigned ON true
                WHERE s.id = ANY(\(ids)::bigint[])
                  -- A snoozed occurrence is due again by a later row (its step is the snooze count).
                  AND (s.kind <> 'care_due' OR s.step = o.snoozes)
                """
        }
    }
}
