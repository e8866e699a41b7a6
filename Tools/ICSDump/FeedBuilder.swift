import Foundation
import OrbitCoveCalendar

/// Turns a spec into ICS text and into the instances our own expansion says the feed holds.
extension FeedSpec {
    func build() throws -> FeedResult {
        let stamp = try SpecTime.local(self.stamp.replacingOccurrences(of: "Z", with: ""), .gmt)
        let window = try SpecTime.local(windowFrom, .gmt)..<(try SpecTime.local(windowTo, .gmt))
        var calendar = ICSCalendar(name: calendarName)
        var instances: [FeedResult.Instance] = []
        for series in self.series {
            let (events, found) = try series.build(stamp: stamp, window: window)
            calendar.events += events
            instances += found
        }
        return FeedResult(ics: calendar.serialized(), instances: instances.sorted())
    }
}

extension FeedSpec.Series {
    func build(stamp: Date, window: Range<Date>) throws -> ([ICSEvent], [FeedResult.Instance]) {
        guard let zone = TimeZone(identifier: tz) else { throw SpecError.bad("unknown zone \(tz)") }
        let isAllDay = allDay ?? false
        let start = try SpecTime.local(self.start, zone)
        var master = ICSEvent(
            uid: uid, start: start, end: end(of: start, length: length, zone: zone), timeZone: zone,
            isAllDay: isAllDay, summary: summary, stamp: stamp)
        master.details = description
        master.location = location
        master.geo = geo.flatMap { $0.count == 2 ? ICSEvent.Geo(latitude: $0[0], longitude: $0[1]) : nil }
        master.categories = categories ?? []
        master.created = stamp.addingTimeInterval(-86_400)
        master.lastModified = stamp
        master.exceptionDates = try (exdates ?? []).map { try SpecTime.local($0, zone) }
        if let rule { master.recurrenceRule = try RecurrenceRule(parsing: rule) }

        var events = [master]
        var replaced: Set<Date> = []
        var instances: [FeedResult.Instance] = []
        for override in overrides ?? [] {
            let original = try SpecTime.local(override.original, zone)
            replaced.insert(original)
            let newStart = try override.start.map { try SpecTime.local($0, zone) } ?? original
            var event = master
            event.recurrenceRule = nil
            event.exceptionDates = []
            event.recurrenceID = original
            event.start = newStart
            event.end = end(of: newStart, length: override.length ?? length, zone: zone)
            event.summary = override.summary ?? summary
            event.sequence = 1
            event.status = (override.cancelled ?? false) ? .cancelled : .confirmed
            events.append(event)
            if event.status == .confirmed && window.contains(newStart) {
                instances.append(instance(newStart, summary: event.summary, zone: zone))
            }
        }
        let starts: [Date]
        if let rule = master.recurrenceRule {
            let expansion = RecurrenceExpansion(
                rule: rule, start: start, timeZone: zone, exceptions: Set(master.exceptionDates))
            starts = expansion.occurrences(in: window)
        } else {
            starts = window.contains(start) ? [start] : []
        }
        instances += starts.filter { !replaced.contains($0) }.map { instance($0, summary: summary, zone: zone) }
        return (events, instances)
    }

    private func end(of start: Date, length: Int, zone: TimeZone) -> Date {
        guard allDay ?? false else { return start.addingTimeInterval(TimeInterval(length * 60)) }
        let first = CivilDateTime.clamped(start, in: zone).date
        guard let last = first.adding(days: length),
            let midnight = CivilDateTime(date: last, hour: 0, minute: 0, second: 0)
        else { return start }
        return midnight.date(in: zone)
    }

    private func instance(_ start: Date, summary: String, zone: TimeZone) -> FeedResult.Instance {
        let text =
            (allDay ?? false)
            ? CivilDateTime.clamped(start, in: zone).date.description
            : CivilDateTime.clamped(start, in: .gmt).description + "Z"
        return FeedResult.Instance(uid: uid, start: text, summary: summary)
    }
}
