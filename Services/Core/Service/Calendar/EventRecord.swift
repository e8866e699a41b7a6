import Foundation
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization

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

    /// The series' generated instances as a client sees them (a window makes this once per
    /// series: what the instances share is made and its zone looked up once).
    var generatedInstances: GeneratedInstances { GeneratedInstances(series: self) }

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
        e.id, e.sequence, e.updated_at, e.community_id, e.created_by, e.title, e.description, e.starts_at, e.ends_at,
        coalesce(e.all_day, false), e.time_zone, e.location_name, e.location_lat::float8, e.location_lng::float8,
        e.location_address, e.category::text, e.attachments::text, e.rsvp_deadline, e.capacity, e.recurrence_rule,
        e.exception_dates, e.recurrence_parent_id, e.recurrence_id, e.overridden_fields, e.cancelled_at IS NOT NULL,
        e.created_at
        """

    /// The row, or the same version of it decoded before (see ``KnownEvents``).
    init(_ row: PostgresRow) throws {
        var cells = RowReader(row)
        id = try cells.next()
        sequence = try cells.next()
        updatedAt = try cells.next()
        if let known = KnownEvents.shared.record(id, sequence: sequence, updatedAt: updatedAt) {
            self = known
            return
        }
        communityId = try cells.next()
        createdBy = try cells.next()
        title = try cells.next()
        description = try cells.next()
        startsAt = try cells.next()
        endsAt = try cells.next()
        allDay = try cells.next()
        timeZone = try cells.next()
        locationName = try cells.next()
        locationLat = try cells.next()
        locationLng = try cells.next()
        locationAddress = try cells.next()
        let category: String? = try cells.next()
        self.category = EventCategory(rawValue: category ?? "") ?? .other
        // Most events have none: no decoder for those.
        let attachmentText: String? = try cells.next()
        if let attachmentText, attachmentText != "[]" {
            attachments = (try? JSONCoding.decoder.decode([JSONValue].self, from: Data(attachmentText.utf8))) ?? []
        } else {
            attachments = []
        }
        rsvpDeadline = try cells.next()
        capacity = try cells.next()
        recurrenceRule = try cells.next()
        exceptionDates = try cells.next()
        parentId = try cells.next()
        recurrenceId = try cells.next()
        let overridden: [String] = try cells.next()
        overriddenFields = Set(overridden.compactMap(EventField.init(rawValue:)))
        cancelled = try cells.next()
        createdAt = try cells.next()
        KnownEvents.shared.remember(self)
    }
}

/// Event rows decoded before, by id and version, so a row read again unchanged is not decoded
/// again: a window read gets the same few hundred rows on every request, and decoding them was
/// a tenth of its time. Every change to a row raises its `sequence` and sets `updated_at` to
/// the moment of the change (the `events_version` trigger), so the same id, sequence and
/// `updated_at` are the same row; a version from a transaction that rolled back is never read
/// again, as the next change gets its own moment. Only rows the database returned are looked
/// up, so it decides, as before, what a reader may see. A change made with the trigger switched
/// off (`session_replication_role = replica`, a restore with `--disable-triggers`) is not seen
/// until the row's next change or a restart.
final class KnownEvents: Sendable {
    static let shared = KnownEvents(limit: 50_000)

    private let limit: Int
    private let records = Mutex<[UUID: EventRecord]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    func record(_ id: UUID, sequence: Int, updatedAt: Date) -> EventRecord? {
        guard let known = records.withLock({ $0[id] }), known.sequence == sequence, known.updatedAt == updatedAt
        else { return nil }
        return known
    }

    /// Remembers `record`; past the limit the memory starts over.
    func remember(_ record: EventRecord) {
        records.withLock { records in
            if records.count >= limit, records[record.id] == nil { records.removeAll(keepingCapacity: true) }
            records[record.id] = record
        }
    }
}

/// A series' instances as clients see them, each from one template of what they share.
struct GeneratedInstances {
    let series: EventRecord
    /// The series as each of its instances shows it, but for the instance's own times.
    let template: CalendarEvent
    private let zone: TimeZone

    /// What differs between the series' instances (besides answers).
    struct Times {
        var startsAt: Date
        var endsAt: Date?
        var startDate: String?
        var endDate: String?
        var rsvpDeadline: Date?
    }

    init(series: EventRecord) {
        self.series = series
        zone = series.zone
        var template = series.event
        template.recurrenceParentId = nil
        template.exceptionDates = []
        self.template = template
    }

    /// The times of the instance the series generates at `start` (what
    /// ``EventRecord/generated(at:)`` stores for it).
    func times(at start: Date) -> Times {
        let end = series.end(forStart: start, in: zone)
        return Times(
            startsAt: start, endsAt: end,
            startDate: series.allDay ? CalendarEvent.date(of: start, in: zone) : nil,
            endDate: series.allDay ? end.map { CalendarEvent.date(of: $0, in: zone) } : nil,
            rsvpDeadline: series.deadline(forStart: start))
    }

    /// The instance at `start`, named by the series' id and `start`.
    func event(at start: Date) -> CalendarEvent {
        let times = times(at: start)
        var event = template
        event.startsAt = times.startsAt
        event.endsAt = times.endsAt
        event.startDate = times.startDate
        event.endDate = times.endDate
        event.rsvpDeadline = times.rsvpDeadline
        event.recurrenceId = start
        return event
    }
}

extension CalendarEvent {
    /// An all-day event's dates in its zone, from its start and end.
    mutating func setDates(in zone: TimeZone) {
        startDate = Self.date(of: startsAt, in: zone)
        endDate = endsAt.map { Self.date(of: $0, in: zone) }
    }

    /// The day `instant` falls on in `zone`, as `YYYY-MM-DD`.
    static func date(of instant: Date, in zone: TimeZone) -> String {
        CivilDateTime.clamped(instant, in: zone).date.isoText
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
