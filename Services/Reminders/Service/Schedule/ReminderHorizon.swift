import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Keeps the schedule filled `horizon` ahead (60 days), not further: a daily reminder is about
/// 60 rows, not a row per day forever. Each subject (an event series or single event, dues, a
/// care reminder) is planned again whenever it changes (a message from core, a care reminder's
/// edit) and once a day as its horizon moves (``fill()``, a periodic job).
struct ReminderHorizon: Sendable {
    let database: Database
    let logger: Logger
    /// Called after a commit that may have planned a row due sooner than the scheduler sleeps.
    let wake: @Sendable () -> Void
    var horizon: TimeInterval = ReminderDefaults.horizon

    // MARK: The daily pass

    /// Plans the subjects whose horizon is more than a day behind, and any event, dues or care
    /// reminder that has none yet (what existed before this service did, or whose message is
    /// still on its way): a batch at a time, each in its own transaction, claimed with
    /// `SKIP LOCKED` so two replicas share the work. Returns how many were planned.
    @discardableResult
    func fill(limit: Int = 200) async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            try await discover(on: connection)
        }
        var planned = 0
        while true {
            let count = try await database.transaction(scope: .system) { connection -> Int in
                var subjects: [(String, UUID, UUID)] = []
                for try await row in try await connection.query(
                    """
                    SELECT kind, subject_id, community_id FROM reminder_subjects
                    WHERE filled_until < now() + \(horizon - 86_400) * interval '1 second'
                    ORDER BY filled_until
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                    """, logger: logger
                ).decode((String, UUID, UUID).self) {
                    subjects.append(row)
                }
                for (kind, subject, community) in subjects {
                    try await plan(kind: kind, subject: subject, community: community, on: connection)
                }
                return subjects.count
            }
            planned += count
            if count < limit { break }
        }
        if planned > 0 { wake() }
        try await prune()
        return planned
    }

    /// What nobody needs any more: rows fired more than 30 days ago (their messages went long
    /// ago; the notifications keep the history), and the horizon entries of events that have
    /// ended (nothing of theirs can fall due again).
    func prune() async throws {
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                """
                DELETE FROM reminder_schedule
                WHERE id IN (SELECT id FROM reminder_schedule WHERE fired_at < now() - interval '30 days' LIMIT 10000)
                """, logger: logger)
            try await connection.query(
                """
                DELETE FROM reminder_subjects s USING events e
                WHERE s.kind = 'event' AND e.id = s.subject_id
                  AND (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at
                            ELSE coalesce(e.recurrence_end, 'infinity') END) < now() - interval '2 days'
                  AND NOT EXISTS (SELECT 1 FROM reminder_schedule r WHERE r.subject_id = s.subject_id AND r.fired_at IS NULL)
                """, logger: logger)
        }
    }

    /// Subjects nobody planned yet: live events that have not ended, active dues, care reminders.
    private func discover(on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO reminder_subjects (kind, subject_id, community_id)
            SELECT 'event', e.id, e.community_id FROM events e
            WHERE e.recurrence_parent_id IS NULL AND e.deleted_at IS NULL
              AND (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at ELSE coalesce(e.recurrence_end, 'infinity') END) > now()
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'event' AND s.subject_id = e.id)
            UNION ALL
            SELECT 'dues', d.id, d.community_id FROM dues d
            WHERE d.deleted_at IS NULL AND d.is_active
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'dues' AND s.subject_id = d.id)
            UNION ALL
            SELECT 'care', r.id, r.community_id FROM care_reminders r
            WHERE r.deleted_at IS NULL
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'care' AND s.subject_id = r.id)
            ON CONFLICT DO NOTHING
            """, logger: logger)
        // Care reminders and occurrences members changed after they were last planned.
        try await connection.query(
            """
            UPDATE reminder_subjects s SET filled_until = '-infinity'
            WHERE s.kind = 'care' AND s.filled_until > '-infinity'
              AND (EXISTS (SELECT 1 FROM care_reminders r WHERE r.id = s.subject_id AND r.updated_at > s.planned_at)
                   OR EXISTS (SELECT 1 FROM care_occurrences o
                              WHERE o.reminder_id = s.subject_id AND o.updated_at > s.planned_at))
            """, logger: logger)
    }

    func plan(kind: String, subject: UUID, community: UUID, on connection: PostgresConnection) async throws {
        switch kind {
        case "event": try await planEvent(subject, on: connection)
        case "dues": try await planDues(subject, on: connection)
        default: try await planCare(subject, on: connection)
        }
    }

    /// A wake-up a moment from now: a message handler plans inside the inbox's transaction,
    /// which commits after it returns.
    func wakeSoon() {
        let wake = self.wake
        Task {
            try? await Task.sleep(for: .milliseconds(200))
            wake()
        }
    }

    /// Everything a community has, planned again (its settings changed).
    func community(_ community: UUID, on connection: PostgresConnection) async throws {
        var subjects: [(String, UUID)] = []
        for try await row in try await connection.query(
            "SELECT kind, subject_id FROM reminder_subjects WHERE community_id = \(community)", logger: logger
        ).decode((String, UUID).self) {
            subjects.append(row)
        }
        for (kind, subject) in subjects {
            try await plan(kind: kind, subject: subject, community: community, on: connection)
        }
    }

    // MARK: Events

    /// What one message about a community's calendar changes: every event of the community whose
    /// rows changed since they were planned (a split makes a new series, an instance's edit
    /// changes an override), found by the version of the event and its overrides.
    func eventsChanged(in community: UUID, on connection: PostgresConnection) async throws {
        var changed: [UUID] = []
        for try await id in try await connection.query(
            """
            SELECT e.id FROM events e
            LEFT JOIN reminder_subjects s ON s.kind = 'event' AND s.subject_id = e.id
            WHERE e.community_id = \(community) AND e.recurrence_parent_id IS NULL
              AND (s.subject_id IS NULL OR s.planned_version IS DISTINCT FROM (
                      SELECT e.sequence::text || '/' || coalesce(string_agg(o.id::text || ':' || o.sequence, ',' ORDER BY o.id), '')
                      FROM events o WHERE o.recurrence_parent_id = e.id))
              AND (s.subject_id IS NOT NULL OR (e.deleted_at IS NULL AND
                   (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at
                         ELSE coalesce(e.recurrence_end, 'infinity') END) > now()))
            """, logger: logger
        ).decode(UUID.self) {
            changed.append(id)
        }
        for id in changed { try await planEvent(id, on: connection) }
    }

    /// Every event of the community again (its zone or reminder hours changed, or a member's own
    /// lead times did).
    func allEvents(in community: UUID, on connection: PostgresConnection) async throws {
        var ids: [UUID] = []
        for try await id in try await connection.query(
            "SELECT subject_id FROM reminder_subjects WHERE kind = 'event' AND community_id = \(community)",
            logger: logger
        ).decode(UUID.self) {
            ids.append(id)
        }
        for id in ids { try await planEvent(id, on: connection) }
    }

    struct EventRow: Sendable {
        var id: UUID
        var communityId: UUID
        var startsAt: Date
        var timeZone: String
        var rule: String?
        var exceptions: [Date]
        var recurrenceId: Date?
        var gone: Bool
        var rsvpDeadline: Date?
        var capacity: Int?
        var sequence: Int
    }

    func planEvent(_ id: UUID, on connection: PostgresConnection) async throws {
        var series: EventRow?
        var overrides: [EventRow] = []
        for try await row in try await connection.query(
            """
            SELECT id, community_id, starts_at, time_zone, recurrence_rule, exception_dates, recurrence_id,
                   (deleted_at IS NOT NULL OR cancelled_at IS NOT NULL) AS gone, rsvp_deadline, capacity, sequence
            FROM events WHERE id = \(id) OR recurrence_parent_id = \(id)
            ORDER BY id
            """, logger: logger)
        {
            var cells = RowReader(row)
            let event = EventRow(
                id: try cells.next("id"), communityId: try cells.next("community_id"),
                startsAt: try cells.next("starts_at"), timeZone: try cells.next("time_zone"),
                rule: try cells.next("recurrence_rule"), exceptions: try cells.next("exception_dates"),
                recurrenceId: try cells.next("recurrence_id"), gone: try cells.next("gone"),
                rsvpDeadline: try cells.next("rsvp_deadline"), capacity: try cells.next("capacity"),
                sequence: try cells.next("sequence"))
            if event.id == id { series = event } else { overrides.append(event) }
        }
        guard let series, !series.gone else {
            try await ReminderRows.forget(subject: id, subjectKind: "event", on: connection, logger: logger)
            return
        }
        let community = try await communityReminders(series.communityId, on: connection)
        let now = Date()
        let window = now.addingTimeInterval(-86_400)..<now.addingTimeInterval(horizon + Double(community.maxLead) * 60)
        let planned = Self.plan(series, overrides: overrides, community: community, window: window)
        let version =
            "\(series.sequence)/"
            + overrides.sorted { $0.id.lowercasedString < $1.id.lowercasedString }
            .map { "\($0.id.lowercasedString):\($0.sequence)" }.joined(separator: ",")
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "event", community: series.communityId,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
        try await connection.query(
            "UPDATE reminder_subjects SET planned_version = \(version) WHERE kind = 'event' AND subject_id = \(id)",
            logger: logger)
    }

    /// What a community's settings and members ask of event reminders.
    struct CommunityReminders: Sendable {
        /// Every lead time in use, in minutes: the community's default and members' own.
        var leads: [Int]
        var nudgeHours: Int
        var duesDays: [Int]
        var timeZone: String
        var maxLead: Int { max(leads.max() ?? 0, nudgeHours * 60, ReminderDefaults.summaryHours * 60) }
    }

    func communityReminders(_ community: UUID, on connection: PostgresConnection) async throws -> CommunityReminders {
        for try await row in try await connection.query(
            """
            SELECT c.settings::text AS settings,
                   ARRAY(SELECT DISTINCT jsonb_array_elements_text(m.notification_prefs -> 'eventReminderMinutes')::int
                         FROM members m
                         WHERE m.community_id = c.id AND m.left_at IS NULL
                           AND jsonb_typeof(m.notification_prefs -> 'eventReminderMinutes') = 'array') AS leads
            FROM communities c WHERE c.id = \(community)
            """, logger: logger)
        {
            var cells = RowReader(row)
            let text: String = try cells.next("settings")
            let own: [Int] = try cells.next("leads")
            let settings =
                (try? JSONCoding.decoder.decode(CommunitySettings.self, from: Data(text.utf8))) ?? .default
            let fallback = settings.defaultReminderHours > 0 ? [settings.defaultReminderHours * 60] : []
            return CommunityReminders(
                leads: Array(Set(own + fallback)).filter { $0 > 0 && $0 <= ReminderDefaults.maxLeadMinutes }.sorted(),
                nudgeHours: settings.rsvpNudgeHours, duesDays: settings.duesReminderDays,
                timeZone: settings.timezone)
        }
        return CommunityReminders(leads: [], nudgeHours: 0, duesDays: [], timeZone: "UTC")
    }

    /// An event's rows: for each instance starting in `window` (overrides in place, removed and
    /// cancelled instances left out), a reminder per lead time, and for events that ask for
    /// answers (a deadline or a capacity) the nudges and the creator's summary.
    static func plan(
        _ series: EventRow, overrides: [EventRow], community: CommunityReminders, window: Range<Date>
    ) -> [PlannedReminder] {
        let moved = Dictionary(
            overrides.compactMap { override in override.recurrenceId.map { ($0, override) } },
            uniquingKeysWith: { first, _ in first })
        var instances: [(key: Date, start: Date, deadline: Date?, asks: Bool)] = []
        let asks = series.rsvpDeadline != nil || series.capacity != nil
        let deadline = { (start: Date) in
            series.rsvpDeadline.map { start.addingTimeInterval($0.timeIntervalSince(series.startsAt)) }
        }
        if let text = series.rule, let rule = try? RecurrenceRule.parsed(text) {
            let zone = TimeZone(identifier: series.timeZone) ?? .gmt
            // The window is of actual starts; an override may have moved an instance into it
            // from outside, so look a day wider for original starts.
            let wide =
                window.lowerBound.addingTimeInterval(-86_400 * 7)..<window.upperBound.addingTimeInterval(86_400 * 7)
            let expansion = RecurrenceExpansion(
                rule: rule, start: series.startsAt, timeZone: zone, exceptions: Set(series.exceptions))
            for original in expansion.occurrences(in: wide, limit: 5_000) {
                if let override = moved[original] {
                    guard !override.gone else { continue }
                    let overrideAsks = override.rsvpDeadline != nil || override.capacity != nil
                    instances.append((original, override.startsAt, override.rsvpDeadline, overrideAsks))
                } else {
                    instances.append((original, original, deadline(original), asks))
                }
            }
        } else if series.rule == nil {
            instances.append((series.startsAt, series.startsAt, series.rsvpDeadline, asks))
        }
        var planned: [PlannedReminder] = []
        for instance in instances where window.contains(instance.start) {
            let key = ReminderRows.key(instance.key)
            for lead in community.leads {
                planned.append(
                    PlannedReminder(
                        kind: .eventReminder, occurrence: key, step: lead,
                        dueAt: instance.start.addingTimeInterval(-Double(lead) * 60), instanceStart: instance.start))
            }
            guard instance.asks else { continue }
            if community.nudgeHours > 0 {
                planned.append(
                    PlannedReminder(
                        kind: .rsvpNudge, occurrence: key, step: 0,
                        dueAt: instance.start.addingTimeInterval(-Double(community.nudgeHours) * 3600),
                        instanceStart: instance.start))
            }
            if let deadline = instance.deadline, deadline < instance.start {
                planned.append(
                    PlannedReminder(
                        kind: .rsvpNudge, occurrence: key, step: 1,
                        dueAt: deadline.addingTimeInterval(-Double(ReminderDefaults.deadlineNudgeHours) * 3600),
                        instanceStart: instance.start))
            }
            planned.append(
                PlannedReminder(
                    kind: .rsvpSummary, occurrence: key, step: 0,
                    dueAt: instance.start.addingTimeInterval(-Double(ReminderDefaults.summaryHours) * 3600),
                    instanceStart: instance.start))
        }
        return planned
    }

    // MARK: Dues

    /// Dues' rows: for each period whose reminders fall within the horizon, one per day of the
    /// community's `duesReminderDays`, at 09:00 on that day on the community's clock.
    func planDues(_ id: UUID, on connection: PostgresConnection) async throws {
        var found: (community: UUID, periods: [String])?
        for try await row in try await connection.query(
            """
            SELECT d.community_id,
                   ARRAY(SELECT to_char(p, 'YYYY-MM-DD') FROM (
                       SELECT (d.due_date + make_interval(months => n * CASE d.recurrence WHEN 'yearly' THEN 12 ELSE 1 END))::date AS p
                       FROM generate_series(0, CASE d.recurrence WHEN 'none' THEN 0 WHEN 'yearly' THEN 200 ELSE 2400 END) AS n
                   ) periods
                   WHERE p BETWEEN current_date - 100 AND current_date + 100
                   ORDER BY p) AS periods
            FROM dues d WHERE d.id = \(id) AND d.deleted_at IS NULL AND d.is_active
            """, logger: logger)
        {
            var cells = RowReader(row)
            found = (try cells.next("community_id"), try cells.next("periods"))
        }
        guard let found else {
            try await ReminderRows.forget(subject: id, subjectKind: "dues", on: connection, logger: logger)
            return
        }
        let community = try await communityReminders(found.community, on: connection)
        let zone = TimeZone(identifier: community.timeZone) ?? .gmt
        let now = Date()
        let window = now.addingTimeInterval(-86_400)..<now.addingTimeInterval(horizon)
        var planned: [PlannedReminder] = []
        for period in found.periods {
            guard let date = CivilDate(isoText: period) else { continue }
            for day in community.duesDays {
                guard let on = date.adding(days: day),
                    let nine = CivilDateTime(date: on, hour: 9, minute: 0, second: 0)
                else { continue }
                let due = nine.firstInstant(in: zone)
                guard window.contains(due) else { continue }
                planned.append(PlannedReminder(kind: .duesReminder, occurrence: period, step: day, dueAt: due))
            }
        }
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "dues", community: found.community,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
    }

    // MARK: Care reminders

    /// Plans one care reminder in a transaction of its own, right after a member's change to it
    /// committed, and wakes the scheduler.
    func planCareNow(_ id: UUID) async throws {
        try await database.transaction(scope: .system) { connection in
            try await planCare(id, on: connection)
        }
        wake()
    }

    /// A care reminder's occurrences from yesterday to the horizon (made, or moved while still
    /// ahead and undone; an undone one the rule no longer makes goes), then its rows: each
    /// undone occurrence's reminder when due (or snoozed until) and its escalation after the
    /// reminder's minutes.
    func planCare(_ id: UUID, on connection: PostgresConnection) async throws {
        guard let reminder = try await CareStore.reminderRow(id, on: connection, logger: logger),
            reminder.deletedAt == nil
        else {
            try await ReminderRows.forget(subject: id, subjectKind: "care", on: connection, logger: logger)
            return
        }
        let now = Date()
        let occurrences = CareSchedule.occurrences(
            of: reminder, from: now.addingTimeInterval(-86_400), through: now.addingTimeInterval(horizon))
        let dates = occurrences.map(\.date.isoText)
        let due = occurrences.map(\.dueAt)
        try await connection.query(
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
            SELECT \(id), \(reminder.communityId), w.local_date, w.due_at FROM wanted w
            ON CONFLICT (reminder_id, local_date) DO UPDATE SET due_at = EXCLUDED.due_at
                WHERE care_occurrences.status = 'pending' AND care_occurrences.due_at > now()
                  AND care_occurrences.due_at <> EXCLUDED.due_at
            """, logger: logger)
        var planned: [PlannedReminder] = []
        for try await row in try await connection.query(
            """
            SELECT to_char(local_date, 'YYYY-MM-DD') AS local_date, coalesce(snoozed_until, due_at) AS due, snoozes
            FROM care_occurrences
            WHERE reminder_id = \(id) AND status = 'pending' AND local_date >= \(dates.first ?? "1970-01-01")::date
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
                        kind: .careEscalation, occurrence: date, step: 0,
                        dueAt: due.addingTimeInterval(Double(minutes) * 60)))
            }
        }
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "care", community: reminder.communityId,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
    }
}
