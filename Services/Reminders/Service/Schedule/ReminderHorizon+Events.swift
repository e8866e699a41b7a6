import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension ReminderHorizon {
    /// An event's version, with its overrides': what a plan was made from
    /// (`reminder_subjects.planned_version`), compared again when its rows fire. Needs `events e`.
    static let eventVersion = """
        (e.sequence::text || '/' || coalesce((SELECT string_agg(o.id::text || ':' || o.sequence, ',' ORDER BY o.id)
                                             FROM events o WHERE o.recurrence_parent_id = e.id), ''))
        """

    /// What one message about a community's calendar changes: every event of the community whose
    /// rows changed since they were planned (a split makes a new series, an instance's edit
    /// changes an override), found by their versions.
    func eventsChanged(in community: UUID, on connection: PostgresConnection) async throws {
        var changed: [UUID] = []
        for try await id in try await connection.query(
            """
            SELECT e.id FROM events e
            LEFT JOIN reminder_subjects s ON s.kind = 'event' AND s.subject_id = e.id
            WHERE e.community_id = \(community) AND e.recurrence_parent_id IS NULL
              AND (s.subject_id IS NULL OR s.planned_version IS DISTINCT FROM \(unescaped: Self.eventVersion))
              AND (s.subject_id IS NOT NULL OR (e.deleted_at IS NULL AND e.cancelled_at IS NULL AND
                   (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at
                         ELSE coalesce(e.recurrence_end, 'infinity') END) > now()))
            ORDER BY e.id
            """, logger: logger
        ).decode(UUID.self) {
            changed.append(id)
        }
        var settings = CommunityReminders.Known()
        for id in changed { try await planEvent(id, settings: &settings, on: connection) }
    }

    /// Every event of the community again (a member's own lead times changed).
    func allEvents(in community: UUID, on connection: PostgresConnection) async throws {
        var ids: [UUID] = []
        for try await id in try await connection.query(
            """
            SELECT subject_id FROM reminder_subjects WHERE kind = 'event' AND community_id = \(community)
            ORDER BY subject_id
            """, logger: logger
        ).decode(UUID.self) {
            ids.append(id)
        }
        var settings = CommunityReminders.Known()
        for id in ids { try await planEvent(id, settings: &settings, on: connection) }
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
    }

    func planEvent(
        _ id: UUID, settings: inout CommunityReminders.Known, on connection: PostgresConnection
    ) async throws {
        guard try await lockedCommunity(of: "event", id, in: .events, on: connection) != nil else { return }
        var series: EventRow?
        var overrides: [EventRow] = []
        var version = ""
        for try await row in try await connection.query(
            """
            SELECT e.id, e.community_id, e.starts_at, e.time_zone, e.recurrence_rule, e.exception_dates, e.recurrence_id,
                   (e.deleted_at IS NOT NULL OR e.cancelled_at IS NOT NULL) AS gone, e.rsvp_deadline, e.capacity,
                   CASE WHEN e.id = \(id) THEN \(unescaped: Self.eventVersion) ELSE '' END AS version
            FROM events e WHERE e.id = \(id) OR e.recurrence_parent_id = \(id)
            ORDER BY e.id
            """, logger: logger)
        {
            var cells = RowReader(row)
            let event = EventRow(
                id: try cells.next("id"), communityId: try cells.next("community_id"),
                startsAt: try cells.next("starts_at"), timeZone: try cells.next("time_zone"),
                rule: try cells.next("recurrence_rule"), exceptions: try cells.next("exception_dates"),
                recurrenceId: try cells.next("recurrence_id"), gone: try cells.next("gone"),
                rsvpDeadline: try cells.next("rsvp_deadline"), capacity: try cells.next("capacity"))
            let rowVersion: String = try cells.next("version")
            if event.id == id {
                series = event
                version = rowVersion
            } else {
                overrides.append(event)
            }
        }
        guard let series, !series.gone else {
            try await ReminderRows.forget(subject: id, subjectKind: "event", on: connection, logger: logger)
            return
        }
        let reminders = try await CommunityReminders.read(
            series.communityId, known: &settings, on: connection, logger: logger)
        let now = Date()
        let window = now.addingTimeInterval(-86_400)..<now.addingTimeInterval(horizon + Double(reminders.maxLead) * 60)
        let planned = Self.plan(series, overrides: overrides, community: reminders, window: window)
        try await ReminderRows.replace(
            planned, subject: id, subjectKind: "event", community: series.communityId,
            filledUntil: now.addingTimeInterval(horizon), on: connection, logger: logger)
        try await connection.run(
            "UPDATE reminder_subjects SET planned_version = \(version) WHERE kind = 'event' AND subject_id = \(id)",
            logger: logger)
    }

    /// The key of a single event's rows: it has one instance, whatever its start, so a move
    /// moves its rows rather than making new ones (a series' instances are keyed by their
    /// original start, which a move of the instance keeps).
    static let singleEventKey = "single"

    /// An event's rows: for each instance starting in `window` (overrides in place, removed and
    /// cancelled instances left out), a reminder per lead time, and for events that ask for
    /// answers (a deadline or a capacity) the nudges and the creator's summary.
    static func plan(
        _ series: EventRow, overrides: [EventRow], community: CommunityReminders, window: Range<Date>
    ) -> [PlannedReminder] {
        let asks = series.rsvpDeadline != nil || series.capacity != nil
        let deadline = { (start: Date) in
            series.rsvpDeadline.map { start.addingTimeInterval($0.timeIntervalSince(series.startsAt)) }
        }
        var instances: [(key: String, start: Date, deadline: Date?, asks: Bool)] = []
        if let text = series.rule, let rule = try? RecurrenceRule.parsed(text) {
            let zone = TimeZone(identifier: series.timeZone) ?? .gmt
            let removed = Set(series.exceptions)
            var moved: [Date: EventRow] = [:]
            for override in overrides {
                if let original = override.recurrenceId, !removed.contains(original) { moved[original] = override }
            }
            let expansion = RecurrenceExpansion(rule: rule, start: series.startsAt, timeZone: zone, exceptions: removed)
            for original in expansion.occurrences(in: window, limit: 5_000) where moved[original] == nil {
                instances.append((ReminderRows.key(original), original, deadline(original), asks))
            }
            // An instance moved may start in the window wherever its original start is.
            for (original, override) in moved where !override.gone && window.contains(override.startsAt) {
                let overrideAsks = override.rsvpDeadline != nil || override.capacity != nil
                instances.append((ReminderRows.key(original), override.startsAt, override.rsvpDeadline, overrideAsks))
            }
        } else if series.rule == nil, window.contains(series.startsAt) {
            instances.append((singleEventKey, series.startsAt, series.rsvpDeadline, asks))
        }
        var planned: [PlannedReminder] = []
        for instance in instances {
            for lead in community.leads {
                planned.append(
                    PlannedReminder(
                        kind: .eventReminder, occurrence: instance.key, step: lead,
                        dueAt: instance.start.addingTimeInterval(-Double(lead) * 60), instanceStart: instance.start))
            }
            guard instance.asks else { continue }
            if community.nudgeHours > 0 {
                planned.append(
                    PlannedReminder(
                        kind: .rsvpNudge, occurrence: instance.key, step: 0,
                        dueAt: instance.start.addingTimeInterval(-Double(community.nudgeHours) * 3600),
                        instanceStart: instance.start))
            }
            if let deadline = instance.deadline, deadline < instance.start {
                planned.append(
                    PlannedReminder(
                        kind: .rsvpNudge, occurrence: instance.key, step: 1,
                        dueAt: deadline.addingTimeInterval(-Double(ReminderDefaults.deadlineNudgeHours) * 3600),
                        instanceStart: instance.start))
            }
            planned.append(
                PlannedReminder(
                    kind: .rsvpSummary, occurrence: instance.key, step: 0,
                    dueAt: instance.start.addingTimeInterval(-Double(ReminderDefaults.summaryHours) * 3600),
                    instanceStart: instance.start))
        }
        return planned
    }
}
