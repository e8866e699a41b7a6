import Foundation
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

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
        return try? RecurrenceRule(parsing: recurrenceRule)
    }

    /// The series' instances; `withExceptions: false` keeps the removed ones (COUNT counts them).
    func expansion(withExceptions: Bool = true) -> RecurrenceExpansion? {
        rule.map {
            RecurrenceExpansion(
                rule: $0, start: startsAt, timeZone: zone, exceptions: withExceptions ? Set(exceptionDates) : [])
        }
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
    /// the same number of days (a day is not always 24 hours).
    func end(forStart start: Date) -> Date? {
        guard let endsAt else { return nil }
        guard allDay else { return start.addingTimeInterval(endsAt.timeIntervalSince(startsAt)) }
        let zone = zone
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
        let zone = zone
        return CalendarEvent(
            id: id, communityId: communityId, createdBy: createdBy, title: title, description: description,
            startsAt: startsAt, endsAt: endsAt, allDay: allDay,
            startDate: allDay ? CivilDateTime.clamped(startsAt, in: zone).date.isoText : nil,
            endDate: allDay ? endsAt.map { CivilDateTime.clamped($0, in: zone).date.isoText } : nil,
            timeZone: timeZone, locationName: locationName, locationLat: locationLat, locationLng: locationLng,
            locationAddress: locationAddress, category: category, attachments: attachments,
            rsvpDeadline: rsvpDeadline, capacity: capacity, recurrenceRule: recurrenceRule,
            exceptionDates: exceptionDates, recurrenceParentId: parentId, recurrenceId: recurrenceId,
            cancelled: cancelled, sequence: sequence, createdAt: createdAt, updatedAt: updatedAt)
    }

    /// One instance of this series, generated at `start` (or this override's instance): the
    /// series' id and the instance's original start name it.
    func instance(at recurrenceId: Date, of series: EventRecord) -> CalendarEvent {
        var instance = isOverride ? self : series.generated(at: recurrenceId)
        instance.cancelled = instance.cancelled || series.cancelled
        var event = instance.event
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

extension EventRecord {
    /// The columns ``init(_:)`` reads, from `events e` (a constant, for `\(unescaped:)`).
    static let columns = """
        e.id, e.community_id, e.created_by, e.title, e.description, e.starts_at, e.ends_at, coalesce(e.all_day, false),
        e.time_zone, e.location_name, e.location_lat::float8, e.location_lng::float8, e.location_address,
        e.category::text, e.attachments::text, e.rsvp_deadline, e.capacity, e.recurrence_rule, e.exception_dates,
        e.recurrence_parent_id, e.recurrence_id, e.overridden_fields, e.cancelled_at IS NOT NULL, e.sequence,
        e.created_at, e.updated_at
        """

    init(_ row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        id = try cells[0].decode(UUID.self)
        communityId = try cells[1].decode(UUID.self)
        createdBy = try cells[2].decode(UUID.self)
        title = try cells[3].decode(String.self)
        description = try cells[4].decode(String?.self)
        startsAt = try cells[5].decode(Date.self)
        endsAt = try cells[6].decode(Date?.self)
        allDay = try cells[7].decode(Bool.self)
        timeZone = try cells[8].decode(String.self)
        locationName = try cells[9].decode(String?.self)
        locationLat = try cells[10].decode(Double?.self)
        locationLng = try cells[11].decode(Double?.self)
        locationAddress = try cells[12].decode(String?.self)
        category = EventCategory(rawValue: try cells[13].decode(String?.self) ?? "") ?? .other
        let attachmentText = try cells[14].decode(String?.self) ?? "[]"
        attachments = (try? JSONCoding.decoder.decode([JSONValue].self, from: Data(attachmentText.utf8))) ?? []
        rsvpDeadline = try cells[15].decode(Date?.self)
        capacity = try cells[16].decode(Int?.self)
        recurrenceRule = try cells[17].decode(String?.self)
        exceptionDates = try cells[18].decode([Date].self)
        parentId = try cells[19].decode(UUID?.self)
        recurrenceId = try cells[20].decode(Date?.self)
        overriddenFields = Set(try cells[21].decode([String].self).compactMap(EventField.init(rawValue:)))
        cancelled = try cells[22].decode(Bool.self)
        sequence = try cells[23].decode(Int.self)
        createdAt = try cells[24].decode(Date.self)
        updatedAt = try cells[25].decode(Date.self)
    }
}

/// What an edit can change, in the groups an override remembers and messages report.
enum EventField: String, Sendable, CaseIterable {
    case title
    case details
    case time
    case place
    case category
    case attachments
    case rsvp
    case capacity
}

extension EventRecord {
    /// Which field groups differ between two versions of an event.
    func changedFields(from old: EventRecord) -> Set<EventField> {
        var changed: Set<EventField> = []
        if title != old.title { changed.insert(.title) }
        if description != old.description { changed.insert(.details) }
        if startsAt != old.startsAt || endsAt != old.endsAt || allDay != old.allDay { changed.insert(.time) }
        if locationName != old.locationName || locationLat != old.locationLat || locationLng != old.locationLng
            || locationAddress != old.locationAddress
        {
            changed.insert(.place)
        }
        if category != old.category { changed.insert(.category) }
        if attachments != old.attachments { changed.insert(.attachments) }
        if rsvpDeadline != old.rsvpDeadline { changed.insert(.rsvp) }
        if capacity != old.capacity { changed.insert(.capacity) }
        return changed
    }

    /// Copies the given field groups from `source` (the time only when `source` is not a
    /// series, whose own time is its first instance's).
    mutating func copy(_ fields: Set<EventField>, from source: EventRecord) {
        for field in fields {
            switch field {
            case .title: title = source.title
            case .details: description = source.description
            case .time:
                startsAt = source.startsAt
                endsAt = source.endsAt
                allDay = source.allDay
            case .place:
                locationName = source.locationName
                locationLat = source.locationLat
                locationLng = source.locationLng
                locationAddress = source.locationAddress
            case .category: category = source.category
            case .attachments: attachments = source.attachments
            case .rsvp: rsvpDeadline = source.rsvpDeadline
            case .capacity: capacity = source.capacity
            }
        }
    }
}
