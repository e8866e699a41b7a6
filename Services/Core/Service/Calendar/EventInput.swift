import Foundation
import Hummingbird
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels

/// An event body (`POST` or `PATCH`), read field by field, and applied to an event to give
/// the event it asks for, checked as a whole (times in order, the rule understood, its first
/// instance at `startsAt`, exceptions that are instances).
struct EventInput {
    static let fields: Set<String> = [
        "title", "description", "startsAt", "endsAt", "allDay", "locationName", "locationLat", "locationLng",
        "locationAddress", "category", "attachments", "rsvpDeadline", "capacity", "recurrenceRule", "exceptionDates",
    ]
    /// Times the calendar takes: the years 1900 to 2199, UTC (the window read's end may be the upper bound itself).
    static let supported = Date(timeIntervalSince1970: -2_208_988_800)..<Date(timeIntervalSince1970: 7_258_118_400)

    /// An event lasts at most this long (a window read looks this far back for instances that
    /// started before it and still run).
    static let longest: TimeInterval = 31 * 86_400
    static let maxExceptions = 1_000

    /// A start or end: a date-time, or for an all-day event a date (`YYYY-MM-DD`).
    enum TimeValue {
        case instant(Date)
        case date(CivilDate)
    }

    var title: Change<String>
    var description: Change<String>
    var startsAt: TimeValue?
    var endsAt: Change<TimeValue>
    var allDay: Bool?
    var locationName: Change<String>
    var locationLat: Change<Double>
    var locationLng: Change<Double>
    var locationAddress: Change<String>
    var category: Change<EventCategory>
    var attachments: [JSONValue]?
    var rsvpDeadline: Change<Date>
    var capacity: Change<Int>
    var recurrenceRule: Change<String>
    var exceptionDates: [Date]?
    private var problems: [String: String]

    /// Reads a body; `creating` makes `title` and `startsAt` required and refuses `null`.
    static func read(_ request: Request, context: some RequestContext, creating: Bool) async throws -> EventInput {
        var reader = try await FieldReader.read(request, context: context, allowed: fields, nullClears: !creating)
        return EventInput(&reader, creating: creating)
    }

    init(_ reader: inout FieldReader, creating: Bool) {
        title = reader.line("title", maxLength: 200, required: creating)
        if case .clear = title { reader.problems["title"] = "must not be empty" }
        description = reader.text("description", maxLength: 10_000)
        startsAt = Self.time("startsAt", &reader)
        if creating, startsAt == nil, reader.problems["startsAt"] == nil { reader.problems["startsAt"] = "is required" }
        if case .null = reader.fields["startsAt"] { reader.problems["startsAt"] = "must not be null" }
        switch reader.fields["endsAt"] {
        case nil: endsAt = .keep
        case .null:
            endsAt = .keep
            if creating { reader.problems["endsAt"] = "must not be null" } else { endsAt = .clear }
        default: endsAt = Self.time("endsAt", &reader).map { .set($0) } ?? .keep
        }
        allDay = reader.boolean("allDay")
        locationName = reader.line("locationName", maxLength: 200)
        locationLat = reader.number("locationLat", in: -90...90)
        locationLng = reader.number("locationLng", in: -180...180)
        locationAddress = reader.text("locationAddress", maxLength: 1_000)
        category = reader.choice("category", as: EventCategory.self)
        attachments = Self.attachments(&reader)
        if creating, case .null = reader.fields["attachments"] { reader.problems["attachments"] = "must not be null" }
        rsvpDeadline = reader.instant("rsvpDeadline")
        capacity = reader.integer("capacity", in: 1...100_000)
        recurrenceRule = reader.text("recurrenceRule", maxLength: 500)
        exceptionDates = reader.instants("exceptionDates", maxCount: Self.maxExceptions)
        problems = reader.problems
    }

    /// Whether the body changes what a series is (only a whole series, or the part that
    /// follows an instance, can).
    var changesSeries: Bool {
        if case .keep = recurrenceRule { return exceptionDates != nil }
        return true
    }

    /// Whether the body names a new start or end.
    var changesTime: Bool {
        if case .keep = endsAt { return startsAt != nil || allDay != nil }
        return true
    }

    /// The event `base` becomes with this body applied, in the event's own zone. With
    /// `keepingDeadlineDistance` (an instance whose deadline is its series'), a new start moves
    /// the deadline with it unless the body sets one.
    func applied(to base: EventRecord, keepingDeadlineDistance: Bool = false) throws -> EventRecord {
        var problems = problems
        var event = base
        let zone = base.zone
        if case .set(let value) = title { event.title = value }
        if let value = description.applied(to: base.description) { event.description = value }
        if let allDay { event.allDay = allDay }
        if let value = locationName.applied(to: base.locationName) { event.locationName = value }
        if let value = locationLat.applied(to: base.locationLat) { event.locationLat = value }
        if let value = locationLng.applied(to: base.locationLng) { event.locationLng = value }
        if let value = locationAddress.applied(to: base.locationAddress) { event.locationAddress = value }
        if case .set(let value) = category { event.category = value }
        if case .clear = category { event.category = .other }
        if let attachments { event.attachments = attachments }
        if let value = rsvpDeadline.applied(to: base.rsvpDeadline) { event.rsvpDeadline = value }
        if let value = capacity.applied(to: base.capacity) { event.capacity = value }

        applyTimes(to: &event, from: base, zone: zone, problems: &problems)
        if keepingDeadlineDistance, case .keep = rsvpDeadline, let deadline = base.rsvpDeadline {
            event.rsvpDeadline = deadline.addingTimeInterval(event.startsAt.timeIntervalSince(base.startsAt))
        }
        if let deadline = event.rsvpDeadline, deadline > event.startsAt {
            problems["rsvpDeadline"] = "must not be after startsAt"
        }

        switch recurrenceRule {
        case .keep: break
        case .clear:
            event.recurrenceRule = nil
            event.exceptionDates = []
        case .set(let text):
            let rule: RecurrenceRule
            do {
                rule = try RecurrenceRule(parsing: text)
            } catch {
                throw Self.unsupported("recurrenceRule", error.message)
            }
            if let problem = Self.untilProblem(rule, allDay: event.allDay) {
                throw Self.unsupported("recurrenceRule", problem)
            }
            event.recurrenceRule = rule.rfc5545Value
            // Room for the UNTIL a split writes in place of a COUNT (the column holds 500).
            if (event.recurrenceRule?.utf8.count ?? 0) > 460 { problems["recurrenceRule"] = "is too long" }
        }
        if let exceptionDates {
            let distinct = Set(exceptionDates)
            if distinct.count < exceptionDates.count {
                problems["exceptionDates"] = "must name each instance once"
            }
            event.exceptionDates = distinct.sorted()
        }
        for (field, date) in [
            ("startsAt", event.startsAt), ("endsAt", event.endsAt), ("rsvpDeadline", event.rsvpDeadline),
        ]
        where date.map({ !Self.supported.contains($0) }) ?? false {
            problems[field] = "must be in the years 1900 to 2199 (UTC)"
        }
        if !event.exceptionDates.allSatisfy(Self.supported.contains) {
            problems["exceptionDates"] = "must be in the years 1900 to 2199 (UTC)"
        }
        guard problems.isEmpty else { throw APIError.validation(problems) }

        if event.isSeries {
            guard event.expansion(withExceptions: false)?.startMatchesRule == true else {
                throw Self.unsupported(
                    "startsAt", "must be the series' first instance: the rule does not generate it in \(base.timeZone)")
            }
            // Exceptions sent now must be instances (ones kept from before are checked by the
            // edit that may move them); one expansion answers for all of them.
            if let sent = exceptionDates, let last = sent.max() {
                let instances = event.instances(through: last)
                if let stray = event.exceptionDates.first(where: { !instances.contains($0) }) {
                    throw APIError.validation([
                        "exceptionDates": "\(JSONCoding.formatTimestamp(stray)) is not an instance of the series"
                    ])
                }
            }
        } else if !event.exceptionDates.isEmpty {
            throw APIError.validation(["exceptionDates": "only a recurring series has exception dates"])
        }
        return event
    }

    /// Start, end and all-day: a new start keeps the event's length unless a new end is given;
    /// an all-day event starts at midnight of its first day in its zone and ends at midnight
    /// after its last.
    private func applyTimes(
        to event: inout EventRecord, from base: EventRecord, zone: TimeZone, problems: inout [String: String]
    ) {
        let length = base.endsAt.map { $0.timeIntervalSince(base.startsAt) }
        if event.allDay {
            let firstDay: CivilDate
            switch startsAt {
            case .date(let day): firstDay = day
            case .instant(let instant): firstDay = CivilDateTime.clamped(instant, in: zone).date
            case nil: firstDay = CivilDateTime.clamped(base.startsAt, in: zone).date
            }
            let days: Int
            switch endsAt {
            case .set(.date(let day)): days = day.dayNumber - firstDay.dayNumber
            case .set(.instant(let instant)):
                let local = CivilDateTime.clamped(instant, in: zone)
                let midnight = local.hour == 0 && local.minute == 0 && local.second == 0
                days = local.date.dayNumber - firstDay.dayNumber + (midnight ? 0 : 1)
            case .clear: days = 1
            case .keep:
                days =
                    base.allDay && base.endsAt != nil
                    ? max(1, Int(((length ?? 86_400) / 86_400).rounded())) : 1
            }
            guard days >= 1 else {
                problems["endsAt"] = "must be after the first day"
                return
            }
            guard days <= 31 else {
                problems["endsAt"] = "an event lasts at most 31 days"
                return
            }
            event.startsAt = Self.midnight(firstDay, zone)
            event.endsAt = firstDay.adding(days: days).map { Self.midnight($0, zone) }
            return
        }
        switch startsAt {
        case .date: problems["startsAt"] = "a date without a time needs allDay true"
        case .instant(let instant): event.startsAt = instant
        case nil: break
        }
        switch endsAt {
        case .set(.date): problems["endsAt"] = "a date without a time needs allDay true"
        case .set(.instant(let instant)): event.endsAt = instant
        case .clear: event.endsAt = nil
        case .keep:
            // A timed event that was all-day keeps no end it cannot mean.
            event.endsAt = base.allDay ? nil : length.map { event.startsAt.addingTimeInterval($0) }
        }
        if let end = event.endsAt {
            if end < event.startsAt { problems["endsAt"] = "must not be before startsAt" }
            if end.timeIntervalSince(event.startsAt) > Self.longest {
                problems["endsAt"] = "an event lasts at most 31 days"
            }
        }
    }

    private static func midnight(_ day: CivilDate, _ zone: TimeZone) -> Date {
        CivilDateTime(date: day, hour: 0, minute: 0, second: 0)?.date(in: zone) ?? Date(timeIntervalSince1970: 0)
    }

    private static func time(_ key: String, _ reader: inout FieldReader) -> TimeValue? {
        guard let value = reader.fields[key], case .string(let text) = value else {
            if let value = reader.fields[key], value != .null {
                reader.problems[key] = "must be an ISO 8601 date-time with an offset, or a date for an all-day event"
            }
            return nil
        }
        if let day = CivilDate(isoText: text) { return .date(day) }
        if let instant = JSONCoding.parseTimestamp(text) { return .instant(instant) }
        reader.problems[key] = "must be an ISO 8601 date-time with an offset, or a date for an all-day event"
        return nil
    }

    private static func attachments(_ reader: inout FieldReader) -> [JSONValue]? {
        switch reader.fields["attachments"] {
        case nil: return nil
        case .null: return []
        case .array(let items) where items.count <= 20:
            let encoded = (try? JSONCoding.encoder.encodeBytes(items))?.count ?? .max
            guard encoded <= 20_000, items.allSatisfy({ if case .object = $0 { true } else { false } }) else {
                reader.problems["attachments"] = "must be a list of at most 20 objects, 20 KB in all"
                return nil
            }
            // PostgreSQL's jsonb cannot hold NUL, in a key or a value.
            guard !items.contains(where: Self.holdsNUL) else {
                reader.problems["attachments"] = "must not contain NUL characters"
                return nil
            }
            return items
        default:
            reader.problems["attachments"] = "must be a list of at most 20 objects, 20 KB in all"
            return nil
        }
    }

    private static func holdsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text.unicodeScalars.contains("\u{0}")
        case .array(let items): items.contains(where: holdsNUL)
        case .object(let fields): fields.contains { $0.key.unicodeScalars.contains("\u{0}") || holdsNUL($0.value) }
        case .number, .bool, .null: false
        }
    }

    /// `422`: the request is well formed but asks for something the calendar does not do.
    static func unsupported(_ field: String, _ message: String) -> APIError {
        APIError(
            .unprocessableContent, code: "UNSUPPORTED_RECURRENCE", message: message,
            details: ["fields": .object([field: .string(message)])])
    }
}

extension Change {
    /// The new value for a column (`.some(nil)` clears it), or nil to keep it.
    func applied(to current: Value?) -> Value?? {
        switch self {
        case .keep: return nil
        case .clear: return .some(nil)
        case .set(let value): return .some(value)
        }
    }
}
