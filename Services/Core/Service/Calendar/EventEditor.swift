import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Writing the calendar: creating events and series, and changing or deleting a single event,
/// one instance (`this`), a series from an instance on (`following`, which splits the series
/// there) or a whole series (`all`), each on the community write path with its message.
///
/// - `this` writes an override: a copy of the instance keyed by the series and the instance's
///   original start, remembering which of its fields were edited on it.
/// - `all` changes the series and carries each change to the overrides that did not edit that
///   field themselves; a new start moves every instance, exception, override and answer by the
///   same wall-clock amount.
/// - Deleting an event someone said they would come to cancels it instead (they still see it,
///   cancelled); deleting one instance adds an exception date.
struct EventEditor: Sendable {
    let writes: CommunityWrites
    let logger: Logger

    func create(
        _ input: EventInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> CalendarEvent
    {
        let now = Date()
        let blank = EventRecord(
            id: .random(), communityId: granted.communityId, createdBy: granted.userId, title: "", description: nil,
            startsAt: now, endsAt: nil, allDay: false, timeZone: Self.zoneName(granted.record.settings.timezone),
            locationName: nil, locationLat: nil, locationLng: nil, locationAddress: nil, category: .other,
            attachments: [], rsvpDeadline: nil, capacity: nil, recurrenceRule: nil, exceptionDates: [], parentId: nil,
            recurrenceId: nil, overriddenFields: [], cancelled: false, sequence: 0, createdAt: now, updatedAt: now)
        let event = try input.applied(to: blank)
        return try await writes.change(in: granted.communityId, by: granted.userId, request: request) {
            change, connection in
            let stored = try await Self.insert(event, on: connection, logger: logger)
            change.touched(1)
            change.announce(
                EventCreated(
                    communityId: granted.communityId, communityName: granted.record.name, event: stored.summary(),
                    rsvpRequested: stored.rsvpDeadline != nil || stored.capacity != nil))
            return stored.event
        }
    }

    func edit(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, input: EventInput, granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> CalendarEvent {
        try await writes.change(in: granted.communityId, by: granted.userId, request: request) { change, connection in
            let target = try await resolve(
                id, recurrenceId: recurrenceId, scope: scope, action: .editEvent, granted: granted, on: connection)
            if target.event.cancelled { throw CalendarErrors.cancelled }
            var edit = Edit(change: change, connection: connection, granted: granted, logger: logger)
            defer { change = edit.change }
            switch target {
            case .instance(let series, let start):
                return try await edit.instance(series, at: start, with: input)
            case .following(let series, let start) where start != series.startsAt:
                let tail = try await edit.split(series, at: start)
                return try await edit.whole(tail, with: input, scope: .following)
            case .following(let event, _), .whole(let event):
                return try await edit.whole(event, with: input, scope: event.isSeries ? .all : nil)
            }
        }
    }

    func delete(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws {
        try await writes.change(in: granted.communityId, by: granted.userId, request: request) { change, connection in
            let target = try await resolve(
                id, recurrenceId: recurrenceId, scope: scope, action: .deleteEvent, granted: granted, on: connection)
            var edit = Edit(change: change, connection: connection, granted: granted, logger: logger)
            defer { change = edit.change }
            switch target {
            case .instance(let series, let start):
                try await edit.removeInstance(of: series, at: start)
            case .following(let series, let start) where start != series.startsAt:
                let tail = try await edit.split(series, at: start)
                try await edit.remove(tail, scope: .following)
            case .following(let event, _), .whole(let event):
                try await edit.remove(event, scope: event.isSeries ? .all : nil)
            }
        }
    }

    /// What an edit or deletion applies to.
    private enum Target {
        /// A single event or a whole series.
        case whole(EventRecord)
        /// One instance of a series, by its original start.
        case instance(EventRecord, Date)
        /// A series from the instance with this original start on.
        case following(EventRecord, Date)

        var event: EventRecord {
            switch self {
            case .whole(let event), .instance(let event, _), .following(let event, _): event
            }
        }
    }

    /// What a request names, checked and locked: the series (or single event) and, for `this`
    /// and `following`, the instance's original start.
    private func resolve(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, action: ContentAction, granted: CommunityGate.Granted,
        on connection: PostgresConnection
    ) async throws -> Target {
        let stored = try await EventStore.load(id, in: granted.communityId, on: connection, logger: logger)
        let (series, instance) = try await EventStore.instance(
            of: stored, recurrenceId: recurrenceId, on: connection, logger: logger)
        let owner = series ?? stored
        try granted.require(action, on: owner.owned)
        // Locked only now: a locking read goes through the write policy, so a member who may not
        // write the event would otherwise be told it does not exist. A lock the policy refuses
        // after the gate allowed it means the actor was demoted meanwhile.
        let locked: EventRecord
        do {
            locked = try await EventStore.load(
                owner.id, in: granted.communityId, forUpdate: true, on: connection, logger: logger)
        } catch let error as APIError where error.code == CalendarErrors.eventNotFound.code {
            throw APIError.forbidden
        }
        if series != nil, let start = instance?.recurrenceId ?? recurrenceId {
            if stored.isOverride, let scope, scope != .this {
                throw APIError.validation(["scope": "an override is one instance: use its series' id for \(scope)"])
            }
            if locked.exceptionDates.contains(start) { throw CalendarErrors.instanceNotFound }
            switch scope ?? .this {
            case .this: return .instance(locked, start)
            case .following: return .following(locked, start)
            case .all: return .whole(locked)
            }
        }
        if let scope, scope != .all {
            throw APIError.validation([
                "recurrenceId": stored.isSeries
                    ? "is required for scope \(scope.rawValue)" : "a single event has no instances: leave scope out"
            ])
        }
        return .whole(locked)
    }

    static func zoneName(_ name: String) -> String {
        TimeZone(identifier: name) == nil ? "UTC" : name
    }

    // MARK: - Rows

    static func insert(
        _ event: EventRecord, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> EventRecord
    {
        let attachments = String(decoding: try JSONCoding.encoder.encodeBytes(event.attachments), as: UTF8.self)
        for try await row in try await connection.query(
            """
            INSERT INTO events AS e (
                id, community_id, created_by, title, description, starts_at, ends_at, all_day, time_zone,
                location_name, location_lat, location_lng, location_address, category, attachments, rsvp_deadline,
                capacity, recurrence_rule, exception_dates, recurrence_parent_id, recurrence_id, recurrence_end,
                overridden_fields, cancelled_at)
            VALUES (
                \(event.id), \(event.communityId), \(event.createdBy), \(event.title), \(event.description),
                \(event.startsAt), \(event.endsAt), \(event.allDay), \(event.timeZone), \(event.locationName),
                \(event.locationLat), \(event.locationLng), \(event.locationAddress),
                \(event.category.rawValue)::event_category, \(attachments)::jsonb, \(event.rsvpDeadline),
                \(event.capacity), \(event.recurrenceRule), \(event.exceptionDates), \(event.parentId),
                \(event.recurrenceId), \(event.recurrenceEnd), \(event.overriddenFields.map(\.rawValue).sorted()),
                CASE WHEN \(event.cancelled) THEN NOW() END)
            RETURNING \(unescaped: EventRecord.columns)
            """, logger: logger)
        {
            return try EventRecord(row)
        }
        throw APIError.forbidden
    }

    /// Writes every field of `event` (and deletes it, with `deleted`); the number of rows
    /// written (0 when the second wall refused).
    static func save(
        _ event: EventRecord, deleted: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let attachments = String(decoding: try JSONCoding.encoder.encodeBytes(event.attachments), as: UTF8.self)
        return try await connection.changedRows(
            """
            UPDATE events SET
                title = \(event.title), description = \(event.description), starts_at = \(event.startsAt),
                ends_at = \(event.endsAt), all_day = \(event.allDay), location_name = \(event.locationName),
                location_lat = \(event.locationLat), location_lng = \(event.locationLng),
                location_address = \(event.locationAddress), category = \(event.category.rawValue)::event_category,
                attachments = \(attachments)::jsonb, rsvp_deadline = \(event.rsvpDeadline),
                capacity = \(event.capacity), recurrence_rule = \(event.recurrenceRule),
                exception_dates = \(event.exceptionDates), recurrence_parent_id = \(event.parentId),
                recurrence_id = \(event.recurrenceId), recurrence_end = \(event.recurrenceEnd),
                overridden_fields = \(event.overriddenFields.map(\.rawValue).sorted()),
                cancelled_at = CASE WHEN \(event.cancelled) THEN coalesce(cancelled_at, NOW()) END,
                deleted_at = CASE WHEN \(deleted) THEN NOW() END
            WHERE id = \(event.id) AND deleted_at IS NULL
            RETURNING 1
            """, logger: logger)
    }
}

/// One edit in progress, inside the write path's transaction.
private struct Edit {
    var change: ChangeRecord
    let connection: PostgresConnection
    let granted: CommunityGate.Granted
    let logger: Logger

    /// A single event or a whole series (or the part of one a split made).
    mutating func whole(
        _ current: EventRecord, with input: EventInput, scope: EditScope?
    ) async throws
        -> CalendarEvent
    {
        var updated = try input.applied(to: current)
        let changed = updated.changedFields(from: current)
        let ruleChanged = updated.recurrenceRule != current.recurrenceRule
        guard !changed.isEmpty || ruleChanged || updated.exceptionDates != current.exceptionDates else {
            change.touched(scope == .following ? 1 : 0)
            return current.event
        }
        if current.isSeries {
            let move = WallClockShift(from: current.startsAt, to: updated.startsAt, in: current.zone)
            if !move.isZero, input.exceptionDates == nil {
                updated.exceptionDates = current.exceptionDates.map(move.apply)
            }
            // An end date moves with the series (unless a new rule came with the move).
            if !move.isZero, case .keep = input.recurrenceRule, let rule = updated.rule,
                case .until(let bound) = rule.end
            {
                updated.recurrenceRule = rule.ending(.until(move.apply(bound))).rfc5545Value
            }
            let overrides = try await EventStore.overrides(of: current.id, on: connection, logger: logger)
            // What the series is now: exceptions and overrides keep only instances it generates.
            let keys = (updated.exceptionDates + overrides.compactMap(\.recurrenceId).map(move.apply))
            let instances = updated.isSeries ? updated.instances(through: keys.max() ?? updated.startsAt) : []
            if input.exceptionDates == nil {
                updated.exceptionDates = updated.exceptionDates.filter(instances.contains)
            }
            if !move.isZero {
                try await connection.query(
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
                    change.touched(try await EventEditor.save(override, deleted: true, on: connection, logger: logger))
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
                if inherited.contains(.rsvp) { override.rsvpDeadline = updated.deadline(forStart: start) }
                change.touched(try await EventEditor.save(override, on: connection, logger: logger))
            }
        }
        let written = try await EventEditor.save(updated, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        var changes = changed.map(\.rawValue).sorted()
        if ruleChanged || updated.exceptionDates != current.exceptionDates { changes.append("recurrence") }
        try await announce(updated.summary(), scope: scope, changes: changes, instances: nil, of: current.id)
        if changed.contains(.capacity) {
            try await announcePromotions(in: updated, from: current.capacity)
        }
        return try await EventStore.load(updated.id, in: updated.communityId, on: connection, logger: logger).event
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
        let (_, found) = try await EventStore.instance(of: series, recurrenceId: start, on: connection, logger: logger)
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
        var updated = try input.applied(to: base)
        let changed = updated.changedFields(from: base)
        guard !changed.isEmpty else { return base.instance(at: start, of: series) }
        updated.overriddenFields.formUnion(changed)
        if existing == nil {
            updated = try await EventEditor.insert(updated, on: connection, logger: logger)
            change.touched(1)
        } else {
            let written = try await EventEditor.save(updated, on: connection, logger: logger)
            guard written == 1 else { throw APIError.forbidden }
            change.touched(written)
        }
        let summary = updated.summary(recurrenceId: start, seriesId: series.id)
        try await announce(
            summary, scope: .this, changes: changed.map(\.rawValue).sorted(),
            instances: start..<start.addingTimeInterval(1), of: series.id)
        if changed.contains(.capacity) {
            try await announcePromotions(
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
        let written = try await EventEditor.save(head, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        tail = try await EventEditor.insert(tail, on: connection, logger: logger)
        change.touched(
            try await connection.changedRows(
                """
                UPDATE events SET recurrence_parent_id = \(tail.id)
                WHERE recurrence_parent_id = \(series.id) AND recurrence_id >= \(start) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger))
        try await connection.query(
            """
            SELECT calendar_move_answers(\(series.id), \(tail.id), \(start), make_interval(), \(series.timeZone))
            """, logger: logger)
        return tail
    }

    /// Deletes a single event or a whole series, or cancels it when someone said they would come.
    mutating func remove(_ event: EventRecord, scope: EditScope?) async throws {
        let answered = try await answeredUsers(of: event.id, in: nil)
        var cancelled = event
        cancelled.cancelled = true
        let deleted = answered.isEmpty
        let written = try await EventEditor.save(cancelled, deleted: deleted, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        if deleted, event.isSeries {
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE events SET deleted_at = NOW()
                    WHERE recurrence_parent_id = \(event.id) AND deleted_at IS NULL RETURNING 1
                    """, logger: logger))
        }
        change.audit(
            deleted ? "event.deleted" : "event.cancelled", target: ("event", event.id),
            metadata: ["title": .string(event.title)])
        change.announce(
            EventUpdated(
                communityId: granted.communityId, communityName: granted.record.name, event: event.summary(),
                scope: scope, changes: [deleted ? "deleted" : "cancelled"], updatedBy: granted.userId,
                answeredUserIds: answered))
    }

    /// Deletes one instance of a series: an exception date (and its override goes).
    mutating func removeInstance(of series: EventRecord, at start: Date) async throws {
        let (_, instance) = try await EventStore.instance(
            of: series, recurrenceId: start, on: connection, logger: logger)
        var updated = series
        updated.exceptionDates = Array(Set(series.exceptionDates + [start])).sorted()
        let written = try await EventEditor.save(updated, on: connection, logger: logger)
        guard written == 1 else { throw APIError.forbidden }
        change.touched(written)
        if let instance, instance.isOverride {
            change.touched(try await EventEditor.save(instance, deleted: true, on: connection, logger: logger))
        }
        let summary = (instance ?? series.generated(at: start)).summary(recurrenceId: start, seriesId: series.id)
        try await announce(
            summary, scope: .this, changes: ["cancelled"], instances: start..<start.addingTimeInterval(1),
            of: series.id)
    }

    /// A larger capacity (or none) gives waiting yeses a place: each is told. For a series,
    /// every answered instance that takes the series' capacity (not one set on an override).
    private mutating func announcePromotions(in event: EventRecord, from old: Int?) async throws {
        guard event.isSeries else {
            let key = InstanceKey(eventId: event.id, recurrenceId: nil)
            return try await announcePromotions(key, from: old, to: event.capacity, summary: event.summary())
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
            try await announcePromotions(
                InstanceKey(eventId: event.id, recurrenceId: start), from: old, to: event.capacity,
                summary: event.generated(at: start).summary(recurrenceId: start, seriesId: event.id))
        }
    }

    private mutating func announcePromotions(
        _ key: InstanceKey, from old: Int?, to new: Int?, summary: EventSummary
    ) async throws {
        guard old != new else { return }
        try await RSVPStore.lock(key, on: connection, logger: logger)
        let before = try await RSVPStore.placed(key, on: connection, logger: logger)
        let after = try await RSVPStore.place(key, on: connection, logger: logger)
        for promoted in RSVPStore.promoted(from: before, to: after) {
            change.announce(
                EventWaitlistPromoted(
                    communityId: granted.communityId, communityName: granted.record.name, event: summary,
                    userId: promoted.userId, familyMemberId: promoted.familyMemberId))
        }
    }

    /// `event.updated`, to those who said they would come to an affected instance.
    private mutating func announce(
        _ summary: EventSummary, scope: EditScope?, changes: [String], instances: Range<Date>?, of eventId: UUID
    ) async throws {
        let answered = try await answeredUsers(of: eventId, in: instances)
        change.announce(
            EventUpdated(
                communityId: granted.communityId, communityName: granted.record.name, event: summary, scope: scope,
                changes: changes, updatedBy: granted.userId, answeredUserIds: answered))
    }

    /// Members whose own answer or a dependant's to the event (instances in `range`) is yes or maybe.
    private func answeredUsers(of eventId: UUID, in range: Range<Date>?) async throws -> [UUID] {
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

/// Moving a series' start by wall-clock time in its zone: every instance, exception and
/// answer moves by the same local amount (18:00 to 19:00 is one hour on either side of DST).
struct WallClockShift {
    let seconds: Double
    let zone: TimeZone

    init(from old: Date, to new: Date, in zone: TimeZone) {
        let before = CivilDateTime.clamped(old, in: zone).date(in: .gmt)
        let after = CivilDateTime.clamped(new, in: zone).date(in: .gmt)
        seconds = after.timeIntervalSince(before)
        self.zone = zone
    }

    var isZero: Bool { seconds == 0 }

    /// A rule's end moved the same way: a UTC bound by its instant, a date by its midnight.
    func apply(_ bound: RecurrenceRule.Until) -> RecurrenceRule.Until {
        switch bound {
        case .utc(let time): .utc(CivilDateTime.clamped(apply(time.date(in: .gmt)), in: .gmt))
        case .date(let day):
            CivilDateTime(date: day, hour: 0, minute: 0, second: 0).map {
                .date(CivilDateTime.clamped(apply($0.date(in: zone)), in: zone).date)
            } ?? bound
        case .floating: bound
        }
    }

    func apply(_ instant: Date) -> Date {
        guard !isZero else { return instant }
        let local = CivilDateTime.clamped(instant, in: zone).date(in: .gmt).addingTimeInterval(seconds)
        return CivilDateTime.clamped(local, in: .gmt).date(in: zone)
    }
}
