import Foundation

/// Which zones a feed needs a VTIMEZONE for, and over what span of time each must be right.
enum ICSTimeZoneCoverage {
    struct Zone {
        let timeZone: TimeZone
        let span: ClosedRange<Date>
    }

    /// How far past DTSTAMP an open-ended series is assumed to matter when a zone's rules cannot be written as
    /// an RRULE and its transitions must be listed one by one.
    static let openEndedYears = 10.0
    static let year: TimeInterval = 366 * 86_400

    private static let utcIdentifiers: Set<String> = [
        "UTC", "GMT", "UCT", "Universal", "Zulu", "Greenwich", "GMT0", "Etc/UTC", "Etc/GMT", "Etc/UCT",
        "Etc/Universal", "Etc/Zulu", "Etc/Greenwich", "Etc/GMT0", "Etc/GMT+0", "Etc/GMT-0",
    ]

    /// Times in these zones are written in UTC form (`...Z`), which needs no VTIMEZONE.
    static func isUTC(_ timeZone: TimeZone) -> Bool {
        utcIdentifiers.contains(timeZone.identifier)
    }

    /// One entry per zone that a timed event uses, in order of first use.
    static func zones(for events: [ICSEvent]) -> [Zone] {
        var order: [String] = []
        var zones: [String: (timeZone: TimeZone, earliest: Date, latest: Date)] = [:]
        for event in events where !event.isAllDay && !isUTC(event.timeZone) {
            let dates = moments(of: event)
            guard let earliest = dates.min(), let latest = dates.max() else { continue }
            let id = event.timeZone.identifier
            if let known = zones[id] {
                zones[id] = (known.timeZone, min(known.earliest, earliest), max(known.latest, latest))
            } else {
                order.append(id)
                zones[id] = (event.timeZone, earliest, latest)
            }
        }
        return order.compactMap { id in
            zones[id].map { Zone(timeZone: $0.timeZone, span: $0.earliest...$0.latest.addingTimeInterval(year)) }
        }
    }

    /// Every instant the event's text refers to, including where its series ends.
    private static func moments(of event: ICSEvent) -> [Date] {
        var dates = [event.start, event.end] + event.exceptionDates + [event.recurrenceID].compactMap { $0 }
        guard let rule = event.recurrenceRule, event.recurrenceID == nil else { return dates }
        switch rule.end {
        case .never:
            dates.append(max(event.start, event.stamp).addingTimeInterval(openEndedYears * year))
        case .count(let count):
            let series = RecurrenceExpansion(rule: rule, start: event.start, timeZone: event.timeZone)
            dates += series.occurrences(limit: count).suffix(1)
        case .until(let until):
            switch until {
            case .utc(let time): dates.append(time.date(in: .gmt))
            case .floating(let time): dates.append(time.date(in: event.timeZone))
            case .date(let day):
                let lastSecond = CivilDateTime(date: day, hour: 23, minute: 59, second: 59)
                dates += [lastSecond?.date(in: event.timeZone)].compactMap { $0 }
            }
        }
        return dates
    }
}
