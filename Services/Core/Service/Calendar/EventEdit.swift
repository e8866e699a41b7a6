import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// One edit in progress, inside the write path's transaction: what it wrote, audited and
/// announced is kept in `change`, every row write counted from its `RETURNING`.
struct EventEdit {
    var change: ChangeRecord
    let connection: PostgresConnection
    let granted: CommunityGate.Granted
    let events: EventRows
    let logger: Logger

    /// A single event or a whole series (or the part of one a split made).
    mutating func whole(
        _ current: EventRecord, with input: EventInput, scope: EditScope?
    ) async throws
        -> CalendarEvent
    {
        // A deadline is a distance from the start (each instance's, for a series): a move keeps it.
        var updated = try input.applied(to: current, keepingDeadlineDistance: true)
        let changed = updated.changedFields(from: current)
        let ruleChanged = updated.recurrenceRule != current.recurrenceRule
        // Nothing to write (for `following`, the split that made `current` was counted).
        guard !changed.isEmpty || ruleChanged || updated.exceptionDates != current.exceptionDates else {
            return current.event
        }
        // A series made a single event becomes its first instance: not one that was removed.
        if current.isSeries, !updated.isSeries, current.exceptionDates.contains(current.startsAt) {
            throw APIError.validation([
                "recurrenceRule":
                    "cannot be cleared: the series' first instance was removed, and the single event would bring it back"
            ])
        }
        if current.isSeries {
            let move = WallClockShift(from: current.startsAt, to: updated.startsAt, in: current.zone)
            if !move.isZero, input.exceptionDates == nil {
                updated.exceptionDates = current.exceptionDates.map(move.apply)
            }
            // An end date moves with the series (unless a new rule came with the move), and a
            // series made all-day or timed keeps it in the form that goes with its start.
            let newForm = updated.allDay != current.allDay
            if !move.isZero || newForm, case .keep = input.recurrenceRule, let rule = updated.rule,
                case .until(let bound) = rule.end
            {
                let moved = rule.ending(.until(move.apply(bound)))
                updated.recurrenceRule =
                    (newForm ? moved.untilForm(timeZone: current.zone, allDay: updated.allDay) : moved).rfc5545Value
            }
            let overrides = try await events.overrides(of: current.id, on: connection, logger: logger)
            // What the series is now: exceptions and overrides keep only instances it generates.
            let keys = (updated.exceptionDates + overrides.compactMap(\.recurrenceId).map(move.apply))
            let instances = updated.isSeries ? updated.instances(through: keys.max() ?? updated.startsAt) : []
            if input.exceptionDates == nil {
                updated.exceptionDates = updated.exceptionDates.filter(instances.contains)
            }
            if !move.isZero {
                try await connection.run(
                    """
                    SELECT calendar_move_answers(
                        \(current.id), \(current.id), '-infinity', make_interval(secs => \(move.seconds)),
                        \(current.timeZone))
                    """, logger: logger)
            }
            // Moved later, the last goes first (and earlier, the first), so no override meets
            // another's instance key on the way.
            for var override in move.seconds > 0 ? overrides.reversed() : overrides {
                guard let original = override.recurrenceId else { continue }
                let start = move.apply(original)
                guard instances.contains(start), !updated.exceptionDates.contains(start) else {
                    // The new rule has no such instance any more.
                    change.touched(try await events.save(override, deleted: true, on: connection, logger: logger))
                    continue
                }
                override.recurrenceId = start
                let inherited = changed.subtracting(override.overriddenFields)
                override.copy(inherited.subtracting([.time, .rsvp]), from: updated)
                if !override.overriddenFields.contains(.time) {
                    override.startsAt = start
                    override.endsAt = updated.end(forStart: start)
                    override.allDay = updated.allDay
                }
                // From the instance's own start: a moved instance keeps the series' distance.
                if inherited.contains(.rsvp) { override.rsvpDeadline = updated.deadline(forStart: override.startsAt) }
                change.touched(try await events.save(override, on: connection, logger: logger))
            }
        }
        let written = try await events.save(updated, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        // Made a series, or a single event: the answers go with it. A single event's are keyed
        // by no instance, the series' first instance's by its start (migration 0071).
        if current.isSeries != updated.isSeries {
            let first = updated.startsAt
            let (from, to): (Date?, Date?) = updated.isSeries ? (nil, first) : (first, nil)
            try await connection.run(
                "SELECT calendar_rekey_answers(\(current.id), \(from), \(to))", logger: logger)
            // Placed by the event's capacity: one the first instance had of its own went with
            // the rule, and a new series' first instance has none yet.
            try await announcePlaces(
                InstanceKey(eventId: current.id, recurrenceId: to), capacity: updated.capacity,
                summary: updated.isSeries
                    ? updated.generated(at: first).summary(recurrenceId: first, seriesId: updated.id)
                    : updated.summary())
        }
        // A rule that no longer has an instance drops its answers, which would otherwise come
        // back on an instance a later rule had at that time (migration 0072). Those who said
        // yes or maybe to a dropped instance hear of the change with the rest.
        var answered: [UUID]?
        if ruleChanged {
            answered = try await answeredUsers(of: current.id, in: nil)
            try await dropAnswers(changedFrom: current, to: updated)
        }
        var changes = changed.map(\.rawValue).sorted()
        if ruleChanged || updated.exceptionDates != current.exceptionDates { changes.append("recurrence") }
        try await announce(
            updated.summary(), scope: scope, changes: changes, instances: nil, of: current.id, answered: answered)
        if changed.contains(.capacity) {
            try await announcePlaces(in: updated, from: current.capacity)
        }
        return try await events.load(updated.id, in: updated.communityId, on: connection, logger: logger).event
    }

    /// Deletes the answers to instances a new rule does not have, or the old one did not (the
    /// answers an earlier rule stranded there must not come back), keeping removed instances
    /// both have: they are shown cancelled to those who said yes or maybe. A single event keeps
    /// none under an instance; one made a series keeps its first instance's (just moved there).
    private func dropAnswers(changedFrom current: EventRecord, to updated: EventRecord) async throws {
        var keys: [Date] = []
        for try await key in try await connection.query(
            "SELECT DISTINCT recurrence_id FROM rsvps WHERE event_id = \(updated.id) AND recurrence_id IS NOT NULL",
            logger: logger
        ).decode(Date.self) {
            keys.append(key)
        }
        guard let last = keys.max() else { return }
        let kept: Set<Date>
        switch (current.isSeries, updated.isSeries) {
        case (true, true):
            // The old rule's instances as the move (if any) took their answers.
            let move = WallClockShift(from: current.startsAt, to: updated.startsAt, in: current.zone)
            let reach = last.addingTimeInterval(abs(Double(move.seconds)) + 86_400)
            let before = Set(current.instances(through: reach).map(move.apply))
            kept = updated.instances(through: last).intersection(before)
        case (false, true): kept = [updated.startsAt]
        default: kept = []
        }
        let dropped = keys.filter { !kept.contains($0) }
        guard !dropped.isEmpty else { return }
        try await connection.run("SELECT calendar_drop_answers(\(updated.id), \(dropped))", logger: logger)
    }

    /// One instance: its override, made or changed.
    mutating func instance(
        _ series: EventRecord, at start: Date, with input: EventInput
    ) async throws
        -> CalendarEvent
    {
        guard !input.changesSeries else {
            throw APIError.validation([
                "recurrenceRule": "belongs to the whole series: use scope all or following to change it"
            ])
        }
        let (_, found) = try await events.instance(of: series, recurrenceId: start, on: connection, logger: logger)
        let existing = found.flatMap { $0.isOverride ? $0 : nil }
        var base = existing ?? series.generated(at: start)
        if existing == nil {
            base.id = .random()
            base.createdBy = granted.userId
            base.parentId = series.id
            base.recurrenceId = start
            base.recurrenceRule = nil
            base.exceptionDates = []
            base.overriddenFields = []
            base.cancelled = false
        }
        // A deadline the instance takes from its series keeps its distance from a new start,
        // and stays the series' (not remembered as the instance's own edit).
        let seriesDeadline = !base.overriddenFields.contains(.rsvp)
        var updated = try input.applied(to: base, keepingDeadlineDistance: seriesDeadline)
        let changed = updated.changedFields(from: base)
        guard !changed.isEmpty else { return base.instance(at: start, of: series) }
        var ownEdits = changed
        if seriesDeadline, case .keep = input.rsvpDeadline { ownEdits.remove(.rsvp) }
        updated.overriddenFields.formUnion(ownEdits)
        if existing == nil {
            let inserted = try await events.insert(updated, on: connection, logger: logger)
            change.touched(inserted.count)
            guard let stored = inserted.first else { throw APIError.forbidden }
            updated = stored
        } else {
            let written = try await events.save(updated, on: connection, logger: logger)
            guard written == 1 else { throw APIError.forbidden }
            change.touched(written)
        }
        let summary = updated.summary(recurrenceId: start, seriesId: series.id)
        try await announce(
            summary, scope: .this, changes: changed.map(\.rawValue).sorted(),
            instances: start..<start.addingTimeInterval(1), of: series.id)
        if changed.contains(.capacity) {
            try await announcePlaces(
                InstanceKey(eventId: series.id, recurrenceId: start), from: base.capacity, to: updated.capacity,
                summary: summary)
        }
        return updated.instance(at: start, of: series)
    }

    /// Splits `series` at the instance starting at `start`: the series ends before it, and a
    /// new series (returned) starts there with the rest of the instances, their exceptions,
    /// overrides and answers.
    mutating func split(_ series: EventRecord, at start: Date) async throws -> EventRecord {
        guard let rule = series.rule, let expansion = series.expansion(withExceptions: false) else {
            throw CalendarErrors.instanceNotFound
        }
        let earlier = expansion.occurrences(in: series.startsAt..<start, limit: RecurrenceRule.countRange.upperBound)
        let zone = series.zone
        let day = CivilDateTime.clamped(start, in: zone).date
        let dayBefore = day.adding(days: -1) ?? day
        let lastBefore: RecurrenceRule.Until =
            series.allDay ? .date(dayBefore) : .utc(CivilDateTime.clamped(start.addingTimeInterval(-1), in: .gmt))
        var head = series
        head.recurrenceRule = rule.ending(.until(lastBefore)).rfc5545Value
        head.exceptionDates = series.exceptionDates.filter { $0 < start }

        var tail = series.generated(at: start)
        tail.id = .random()
        tail.createdBy = granted.userId
        tail.exceptionDates = series.exceptionDates.filter { $0 >= start }
        if case .count(let count) = rule.end {
            tail.recurrenceRule = rule.ending(.count(max(1, count - earlier.count))).rfc5545Value
        }
        tail.cancelled = false
        let written = try await events.save(head, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        let inserted = try await events.insert(tail, on: connection, logger: logger)
        change.touched(inserted.count)
        guard let stored = inserted.first else { throw APIError.forbidden }
        tail = stored
        change.touched(
            try await connection.changedRows(
                """
                UPDATE events SET recurrence_parent_id = \(tail.id)
                WHERE recurrence_parent_id = \(series.id) AND recurrence_id >= \(start) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger))
        try await connection.run(
            """
            SELECT calendar_move_answers(\(series.id), \(tail.id), \(start), make_interval(), \(series.timeZone))
            """, logger: logger)
        return tail
    }
}
