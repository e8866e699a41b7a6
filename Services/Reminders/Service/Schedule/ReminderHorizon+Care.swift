import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension ReminderHorizon {
    /// Plans one care reminder in a transaction of its own, right after a member's change to it
    /// committed, and wakes the scheduler. A failure is logged, not thrown: the change stands,
    /// its subject is marked for planning (`care_needs_planning`), and the next pass plans it.
    func planCareNow(_ id: UUID) async {
        do {
            try await database.transaction(scope: .system) { connection in
                try await planCare(id, on: connection)
            }
            wake()
        } catch {
            logger.warning(
                "planning a care reminder failed; the next pass plans it",
                metadata: ["reminder": "\(id)", "error": .string(logDescription(of: error))])
        }
    }

    /// A care reminder's occurrences ahead (made while they are still to come, moved while ahead
    /// and undone; an undone one the rule no longer makes goes), then its rows: each undone
    /// occurrence's reminder when due (or snoozed until) and its escalation after the reminder's
    /// minutes, both keyed by the snooze count, so a snooze arms them again. An occurrence that
    /// fell due before the reminder had it (a new reminder, a new time) is not made: nobody is
    /// told it is overdue before anyone was reminded.
    ///
    /// The reminder is read once its lock is held, as an event is: read before, a planner that
    /// waited for the lock behind a later change's planner would plan what the reminder was.
    func planCare(_ id: UUID, on connection: PostgresConnection) async throws {
        guard try await lockedCommunity(of: "care", id, in: .careReminders, on: connection) != nil,
            let reminder = try await CareStore.reminderRow(id, on: connection, logger: logger),
            reminder.deletedAt == nil
        else {
            try await ReminderRows.forget(subject: id, subjectKind: "care", on: connection, logger: logger)
            return
        }
        let now = Date()
        // From two days back: a new time zone (up to 26 hours away) or time of day can put an
        // occurrence that is still ahead, undone, at a time already past. It is kept and falls
        // due now, with its assignee and snoozes, rather than going as one the rule no longer
        // makes (due now, not at the past time, so its escalation still waits its minutes);
        // one never made before is still not made in the past.
        let occurrences = CareSchedule.occurrences(
            of: reminder, from: now.addingTimeInterval(-2 * 86_400), through: now.addingTimeInterval(horizon))
        let dates = occurrences.map(\.date.isoText)
        let due = occurrences.map(\.dueAt)
        try await connection.run(
            """
            UPDATE care_occurrences o SET due_at = now()
            FROM unnest(\(dates)::text[], \(due)::timestamptz[]) AS w(d, due_at)
            WHERE o.reminder_id = \(id) AND o.local_date = w.d::date AND o.status = 'pending'
              AND o.due_at > now() AND w.due_at <= now()
            """, logger: logger)
        try await connection.run(
            """
            WITH wanted AS (
                SELECT d::date AS local_date, due_at FROM unnest(\(dates)::text[], \(due)::timestamptz[]) AS w(d, due_at)
            ),
            dropped AS (
                DELETE FROM care_occurrences o
                WHERE o.reminder_id = \(id) AND o.status = 'pending' AND o.due_at > now()
                  AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.local_date = o.local_date)
            )
            INSERT INTO care_occurrences (reminder_id, community_id, local_date, due_at)
            SELECT \(id), \(reminder.communityId), w.local_date, w.due_at FROM wanted w WHERE w.due_at > now()
            ON CONFLICT (reminder_id, local_date) DO UPDATE SET due_at = EXCLUDED.due_at
                WHERE care_occurrences.status = 'pending' AND care_occurrences.due_at > now()
                  AND care_occurrences.due_at <> EXCLUDED.due_at
            """, logger: logger)
        // Every undone occurrence whose reminder or escalation may still be waiting, however old.
        // A snooze puts it off, never forward: one made before the reminder moved later is
        // due when the occurrence is (`greatest` leaves out a missing snooze).
        let escalation = reminder.escalateAfterMinutes ?? 0
        var planned: [PlannedReminder] = []
        for try await row in try await connection.query(
            """
            SELECT to_char(local_date, 'YYYY-MM-DD') AS local_date, greatest(snoozed_until, due_at) AS due, snoozes
            FROM care_occurrences
            WHERE reminder_id = \(id) AND status = 'pending'
              AND greatest(snoozed_until, due_at) + \(escalation) * interval '1 minute' > now() - interval '7 days'
            """, logger: logger)
        {
            var cells = RowReader(row)
            let date: String = try cells.next("local_date")
            let due: Date = try cells.next("due")
            let snoozes: Int = try cells.next("snoozes")
            planned.append(PlannedReminder(kind: .careDue, occurrence: date, step: snoozes, dueAt: due))
            if let minutes = reminder.escalateAfterMinutes {
                planned.append(
                    PlannedReminder(
                        kind: .careEscalation, occurrence: date, step: snoozes,
                        dueAt: due.addingTimeInterval(Double(minutes) * 60)))
            }
        }
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "care", community: reminder.communityId,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
    }
}
