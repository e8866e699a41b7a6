import Foundation
import OrbitCoveCalendar
import OrbitCoveModels

/// An `events` row as stored: a single event, a series (it has a rule), or an override of one
/// instance of a series (it has a parent and the instance's original start).
struct EventRecord: Sendable {
    var id: UUID
    var communityId: UUID
    var createdBy: UUID
    var title: String
    var description: String?
    var startsAt: Date
    var endsAt: Date?
    var allDay: Bool
    var timeZone: String
    var locationName: String?
    var locationLat: Double?
    var locationLng: Double?
    var locationAddress: String?
    var category: EventCategory
    var attachments: [JSONValue]
    var rsvpDeadline: Date?
    var capacity: Int?
    var recurrenceRule: String?
    var exceptionDates: [Date]
    var parentId: UUID?
    var recurrenceId: Date?
    /// For an override: which field groups (``EventField``) were edited on it.
    var overriddenFields: Set<EventField>
    var cancelled: Bool
    var sequence: Int
    var createdAt: Date
    var updatedAt: Date

    var isSeries: Bool { recurrenceRule != nil && parentId == nil }
    var isOverride: Bool { parentId != nil }
    var zone: TimeZone { TimeZone(identifier: timeZone) ?? .gmt }
    var owned: OwnedContent { OwnedContent(createdBy: createdBy, createdAt: createdAt) }

    /// The parsed rule of a series (rules are checked before they are stored).
    var rule: RecurrenceRule? {
        guard isSeries, let recurrenceRule else { return nil }
        return try? RecurrenceRule.parsed(recurrenceRule)
    }

    /// The series' instances; `withExceptions: false` keeps the removed ones (COUNT counts them).
    func expansion(withExceptions: Bool = true) -> RecurrenceExpansion? {
        rule.map {
            RecurrenceExpansion(
                rule: $0, start: startsAt, timeZone: zone, exceptions: withExceptions ? Set(exceptionDates) : [])
        }
    }

    /// How long before a window one of the series' instances can start and still run into it:
    /// its length, and a day more for an instance that grows across a change of clocks.
    var instanceReach: TimeInterval {
        max(endsAt.map { $0.timeIntervalSince(startsAt) } ?? 0, 0) + 86_400
    }

    /// Whether `start` is an instance the rule generates (removed ones included).
    func generates(_ start: Date) -> Bool {
        guard let expansion = expansion(withExceptions: false) else { return false }
        return expansion.occurrences(in: start..<start.addingTimeInterval(1), limit: 1).first == start
    }

    /// Every instance the rule generates up to `last` (removed ones included), from one expansion.
    func instances(through last: Date) -> Set<Date> {
        guard let expansion = expansion(withExceptions: false) else { return [] }
        return Set(
            expansion.occurrences(
                in: startsAt..<max(startsAt, last).addingTimeInterval(1),
                limit: RecurrenceRule.countRange.upperBound + 1))
    }

    /// The end of an instance that starts at `start`: the same length, or for an all-day event
    /// the same number of days (a day is not always 24 hours). `zone`, when given, is the
    /// event's, already looked up.
    func end(forStart start: Date, in zone: TimeZone? = nil) -> Date? {
        guard let endsAt else { return nil }
        guard allDay else { return start.addingTimeInterval(endsAt.timeIntervalSince(startsAt)) }
        let zone = zone ?? self.zone
        let days =
            CivilDateTime.clamped(endsAt, in: zone).date.dayNumber
            - CivilDateTime.clamped(startsAt, in: zone).date.dayNumber
        let first = CivilDateTime.clamped(start, in: zone).date
        guard let last = first.adding(days: days),
            let midnight = CivilDateTime(date: last, hour: 0, minute: 0, second: 0)
        else { return nil }
        return midnight.date(in: zone)
    }

    /// The last instance's start, or nil when the series does not end (a window read skips
    /// series that ended before it).
    var recurrenceEnd: Date? {
        guard let rule, let expansion = expansion(withExceptions: false) else { return nil }
        switch rule.end {
        case .never: return nil
        case .count(let count): return expansion.occurrences(limit: count).last ?? startsAt
        case .until:
            let until = rule.untilForm(timeZone: zone, allDay: false)
            guard case .until(.utc(let bound)) = until.end else { return nil }
            return bound.date(in: .gmt)
        }
    }

    /// The RSVP deadline of the instance starting at `start`: a series' deadline keeps its
    /// distance from each instance's start.
    func deadline(forStart start: Date) -> Date? {
        rsvpDeadline.map { start.addingTimeInterval($0.timeIntervalSince(startsAt)) }
    }

    /// The row as a client sees it.
    var event: CalendarEvent {
        var event = CalendarEvent(
            id: id, communityId: communityId, createdBy: createdBy, title: title, description: description,
            startsAt: startsAt, endsAt: endsAt, allDay: allDay, startDate: nil, endDate: nil,
            timeZone: timeZone, locationName: locationName, locationLat: locationLat, locationLng: locationLng,
            locationAddress: locationAddress, category: category, attachments: attachments,
            rsvpDeadline: rsvpDeadline, capacity: capacity, recurrenceRule: recurrenceRule,
            exceptionDates: exceptionDates, recurrenceParentId: parentId, recurrenceId: recurrenceId,
            cancelled: cancelled, sequence: sequence, createdAt: createdAt, updatedAt: updatedAt)
        if allDay { event.setDates(in: zone) }
        return event
    }

    /// One instance of this series, generated at `start` (or this override's instance): the
    /// series' id and the instance's original start name it.
    func instance(at recurrenceId: Date, of series: EventRecord) -> CalendarEvent {
        guard isOverride else { return series.generatedInstances.event(at: recurrenceId) }
        var event = self.event
        event.cancelled = cancelled || series.cancelled
        event.id = series.id
        event.recurrenceId = recurrenceId
        event.recurrenceParentId = nil
        event.recurrenceRule = series.recurrenceRule
        event.exceptionDates = []
        return event
    }

    /// The series' instance at `start` as the series itself would make it.
    func generated(at start: Date) -> EventRecord {
        var instance = self
        instance.endsAt = end(forStart: start)
        instance.rsvpDeadline = deadline(forStart: start)
        instance.startsAt = start
        return instance
    }

    /// What a message says about this event (or, with `recurrenceId`, about that instance).
    func summary(recurrenceId: Date? = nil, seriesId: UUID? = nil) -> EventSummary {
        EventSummary(
            eventId: seriesId ?? id, recurrenceId: recurrenceId, title: title, startsAt: startsAt, endsAt: endsAt,
            allDay: allDay, timeZone: timeZone, locationName: locationName,
            recurrenceRule: recurrenceId == nil ? recurrenceRule : nil, createdBy: createdBy)
    }

    /// Whether the instance [start, end) overlaps `window` (an instant event counts inside it).
    static func overlaps(start: Date, end: Date?, _ window: Range<Date>) -> Bool {
        start < window.upperBound && ((end ?? start) > window.lowerBound || start >= window.lowerBound)
    }
}
