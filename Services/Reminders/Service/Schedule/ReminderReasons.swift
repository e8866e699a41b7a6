import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Why a claimed row fires, worked out when it fires, one statement per kind: its recipients
/// (current members only; none: its reason held for nobody), or no row at all when its reason
/// went away (the event was cancelled or has started, the dues were deleted, the occurrence was
/// done). An event's row planned from an older version of the event is `stale`: it waits for
/// its new plan instead of firing at the old time.
enum ReminderReasons {
    struct Reason: Sendable {
        var recipients: [UUID]
        var title: String
        var stale = false
        var allDay: Bool? = nil
        var timeZone: String? = nil
        var answers: ReminderDue.Answers? = nil
        var amount: Int64? = nil
        var currency: String? = nil
        var occurrenceId: UUID? = nil
    }

    /// A row of a kind this build does not know (written by a newer one): its batch fails, and
    /// the row is given up alone.
    struct UnknownKind: Error {
        var kind: String
    }

    static func read(
        _ kind: ReminderKind, _ ids: [Int], on connection: PostgresConnection, logger: Logger
    ) async throws -> [Int: Reason] {
        var reasons: [Int: Reason] = [:]
        for try await row in try await connection.query(query(kind, ids: ids), logger: logger) {
            var cells = RowReader(row)
            let id: Int = try cells.next("id")
            let recipients: [UUID] = try cells.next("recipients")
            var reason = Reason(recipients: recipients, title: try cells.next("title"))
            switch kind {
            case .eventReminder, .rsvpNudge, .rsvpSummary:
                reason.stale = try cells.next("stale")
                reason.allDay = try cells.next("all_day")
                reason.timeZone = try cells.next("time_zone")
                let counts: [Int] = try cells.next("answers")
                if kind == .rsvpSummary, counts.count == 4 {
                    reason.answers = .init(yes: counts[0], no: counts[1], maybe: counts[2], silent: counts[3])
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

    static func query(_ kind: ReminderKind, ids: [Int]) -> PostgresQuery {
        switch kind {
        case .eventReminder, .rsvpNudge, .rsvpSummary: events(ids)
        case .duesReminder: dues(ids)
        case .careDue, .careEscalation: care(ids)
        }
    }

    /// An event's instance, not cancelled, removed or started. A reminder goes to members who
    /// have not answered no (unless they answered yes or maybe for a dependant) and whose lead
    /// times include its step; a nudge to members with no answer for themselves or a dependant;
    /// the summary to the event's creator.
    private static func events(_ ids: [Int]) -> PostgresQuery {
        """
        WITH due AS (
            SELECT s.id, s.kind, s.step, s.community_id, e.id AS event_id, e.title, e.all_day, e.time_zone,
                   e.created_by, e.exception_dates, c.settings,
                   CASE WHEN e.recurrence_rule IS NULL OR s.occurrence = \(ReminderHorizon.singleEventKey) THEN NULL
                        ELSE s.occurrence::timestamptz END AS rid,
                   sj.planned_version IS NOT NULL
                       AND sj.planned_version IS DISTINCT FROM \(unescaped: ReminderHorizon.eventVersion) AS stale
            FROM reminder_schedule s
            JOIN events e ON e.id = s.subject_id AND e.deleted_at IS NULL AND e.cancelled_at IS NULL
            JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
            LEFT JOIN reminder_subjects sj ON sj.kind = 'event' AND sj.subject_id = e.id
            WHERE s.id = ANY(\(ids)::bigint[]) AND (s.instance_start IS NULL OR s.instance_start > now())
        )
        SELECT d.id, coalesce(r.recipients, '{}') AS recipients, d.title, d.stale, d.all_day, d.time_zone,
               ARRAY[coalesce(a.yes, 0), coalesce(a.no, 0), coalesce(a.maybe, 0), coalesce(a.silent, 0)] AS answers
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
                      AND NOT (EXISTS (SELECT 1 FROM rsvps x
                                       WHERE x.event_id = d.event_id AND x.recurrence_id IS NOT DISTINCT FROM d.rid
                                         AND x.user_id = m.user_id AND x.family_member_id IS NULL AND x.status = 'no')
                               AND NOT EXISTS (SELECT 1 FROM rsvps x
                                               WHERE x.event_id = d.event_id AND x.recurrence_id IS NOT DISTINCT FROM d.rid
                                                 AND x.user_id = m.user_id AND x.status <> 'no'))
                  WHEN 'rsvp_nudge' THEN NOT EXISTS (
                      SELECT 1 FROM rsvps x
                      WHERE x.event_id = d.event_id AND x.recurrence_id IS NOT DISTINCT FROM d.rid AND x.user_id = m.user_id)
                  ELSE m.user_id = d.created_by
              END
        ) r
        LEFT JOIN LATERAL (
            SELECT count(*) FILTER (WHERE x.status = 'yes') AS yes, count(*) FILTER (WHERE x.status = 'no') AS no,
                   count(*) FILTER (WHERE x.status = 'maybe') AS maybe,
                   (SELECT count(*) FROM members m
                    WHERE m.community_id = d.community_id AND m.left_at IS NULL
                      AND NOT EXISTS (SELECT 1 FROM rsvps y
                                      WHERE y.event_id = d.event_id AND y.recurrence_id IS NOT DISTINCT FROM d.rid
                                        AND y.user_id = m.user_id)) AS silent
            FROM rsvps x
            WHERE x.event_id = d.event_id AND x.recurrence_id IS NOT DISTINCT FROM d.rid
        ) a ON d.kind = 'rsvp_summary'
        WHERE NOT (d.rid IS NOT NULL AND (
            d.rid = ANY(d.exception_dates)
            OR EXISTS (SELECT 1 FROM events o
                       WHERE o.recurrence_parent_id = d.event_id AND o.recurrence_id = d.rid
                         AND (o.cancelled_at IS NOT NULL OR o.deleted_at IS NOT NULL))))
        """
    }

    /// Dues still active; those who owe the period (every member who was one when it fell due
    /// or when the dues were set up, counted from their first join on the community's clock;
    /// or those it names, who are members) and have neither paid it in full nor been waived:
    /// core's standings (`DuesStore.Ledger.owers`).
    private static func dues(_ ids: [Int]) -> PostgresQuery {
        """
        WITH due AS (
            SELECT s.id, s.community_id, d.id AS dues_id, d.name, d.currency, d.member_ids, s.occurrence::date AS period,
                   d.created_at AS set_up_at, coalesce(c.settings ->> 'timezone', 'UTC') AS zone,
                   (SELECT a.amount FROM dues_amounts a WHERE a.dues_id = d.id AND a.effective_from <= s.occurrence::date
                    ORDER BY a.effective_from DESC LIMIT 1) AS amount
            FROM reminder_schedule s
            JOIN dues d ON d.id = s.subject_id AND d.deleted_at IS NULL AND d.is_active
            JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
            WHERE s.id = ANY(\(ids)::bigint[])
        )
        SELECT d.id, coalesce(r.recipients, '{}') AS recipients, d.name AS title, coalesce(d.amount, 0) AS amount,
               d.currency
        FROM due d
        CROSS JOIN LATERAL (
            SELECT array_agg(m.user_id ORDER BY m.user_id) AS recipients
            FROM members m
            WHERE m.community_id = d.community_id AND m.left_at IS NULL
              AND CASE WHEN d.member_ids IS NULL
                       THEN app_local_date(m.first_joined_at, d.zone)
                            <= greatest(d.period, app_local_date(d.set_up_at, d.zone))
                       ELSE m.user_id = ANY(d.member_ids) END
              AND NOT EXISTS (SELECT 1 FROM dues_waivers w
                              WHERE w.dues_id = d.dues_id AND w.period = d.period AND w.user_id = m.user_id)
              AND coalesce((SELECT sum(p.amount_paid) FROM dues_payments p
                            WHERE p.dues_id = d.dues_id AND p.period = d.period AND p.user_id = m.user_id), 0)
                  < coalesce(d.amount, 0)
        ) r
        """
    }

    /// An occurrence still undone, whose latest snooze this row is for; its assignee (this
    /// occurrence's, else the reminder's) while a member, else (and for an escalation) everyone.
    private static func care(_ ids: [Int]) -> PostgresQuery {
        """
        SELECT s.id,
               CASE WHEN s.kind = 'care_due' AND assigned.user_id IS NOT NULL THEN ARRAY[assigned.user_id]
                    ELSE coalesce((SELECT array_agg(m.user_id ORDER BY m.user_id) FROM members m
                                   WHERE m.community_id = s.community_id AND m.left_at IS NULL), '{}')
               END AS recipients,
               r.title, o.id AS occurrence_id
        FROM reminder_schedule s
        JOIN care_reminders r ON r.id = s.subject_id AND r.deleted_at IS NULL
        JOIN communities c ON c.id = s.community_id AND c.deleted_at IS NULL
        JOIN care_occurrences o ON o.reminder_id = r.id AND o.local_date = s.occurrence::date AND o.status = 'pending'
        LEFT JOIN LATERAL (
            SELECT m.user_id FROM members m
            WHERE m.community_id = s.community_id AND m.left_at IS NULL
              AND m.user_id = coalesce(o.assignee_id, r.assignee_id)
        ) assigned ON true
        WHERE s.id = ANY(\(ids)::bigint[]) AND s.step = o.snoozes
        """
    }
}
