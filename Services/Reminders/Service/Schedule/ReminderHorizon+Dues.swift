import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension ReminderHorizon {
    /// Dues' rows: for each period whose reminders fall within the horizon, one per day of the
    /// community's `duesReminderDays`, at 09:00 that day on the community's clock.
    func planDues(_ id: UUID, settings: inout CommunityReminders.Known, on connection: PostgresConnection) async throws
    {
        guard let community = try await lockedCommunity(of: "dues", id, in: .dues, on: connection) else { return }
        var periods: [String]?
        for try await found in try await connection.query(
            """
            SELECT ARRAY(SELECT to_char(p, 'YYYY-MM-DD') FROM (
                       SELECT (d.due_date + make_interval(months => n * CASE d.recurrence WHEN 'yearly' THEN 12 ELSE 1 END))::date AS p
                       FROM generate_series(0, CASE d.recurrence WHEN 'none' THEN 0 WHEN 'yearly' THEN 200 ELSE 2400 END) AS n
                   ) periods
                   WHERE p BETWEEN current_date - 100 AND current_date + 100
                   ORDER BY p) AS periods
            FROM dues d WHERE d.id = \(id) AND d.deleted_at IS NULL AND d.is_active
            """, logger: logger
        ).decode([String].self) {
            periods = found
        }
        guard let periods else {
            try await ReminderRows.forget(subject: id, subjectKind: "dues", on: connection, logger: logger)
            return
        }
        let reminders = try await CommunityReminders.read(community, known: &settings, on: connection, logger: logger)
        let zone = TimeZone(identifier: reminders.timeZone) ?? .gmt
        let now = Date()
        let window = now.addingTimeInterval(-86_400)..<now.addingTimeInterval(horizon)
        var planned: [PlannedReminder] = []
        for period in periods {
            guard let date = CivilDate(isoText: period) else { continue }
            for day in reminders.duesDays {
                guard let on = date.adding(days: day),
                    let nine = CivilDateTime(date: on, hour: 9, minute: 0, second: 0)
                else { continue }
                let due = nine.firstInstant(in: zone)
                guard window.contains(due) else { continue }
                planned.append(PlannedReminder(kind: .duesReminder, occurrence: period, step: day, dueAt: due))
            }
        }
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "dues", community: community,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
    }
}
