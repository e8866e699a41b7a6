import Foundation

/// Writes one VEVENT.
struct ICSEventWriter {
    let event: ICSEvent

    func write(into lines: inout ICSContentLines) {
        lines.append("BEGIN", "VEVENT")
        lines.appendText("UID", event.uid)
        lines.append("DTSTAMP", ICSDateText.utc(event.stamp))
        if let recurrenceID = event.recurrenceID {
            appendTime("RECURRENCE-ID", recurrenceID, into: &lines)
        }
        // A master's DTSTART keeps its TZID whatever happens: it anchors the wall-clock time of every instance.
        appendTime("DTSTART", event.start, exact: event.recurrenceRule == nil, into: &lines)
        // A timed event without an end has no DTEND: it ends when it starts (RFC 5545 3.6.1),
        // and a DTEND must be later than DTSTART (3.8.2.2).
        if event.isAllDay || event.end > event.start { appendTime("DTEND", end, into: &lines) }
        if let rule = event.recurrenceRule, event.recurrenceID == nil {
            lines.append("RRULE", rule.untilForm(timeZone: event.timeZone, allDay: event.isAllDay).rfc5545Value)
            // One EXDATE per line: every client reads that form, not all read comma lists with a TZID.
            for exception in event.exceptionDates.sorted() {
                appendTime("EXDATE", exception, into: &lines)
            }
        }
        lines.appendText("SUMMARY", event.summary)
        if let details = event.details, !details.isEmpty { lines.appendText("DESCRIPTION", details) }
        if let location = event.location, !location.isEmpty { lines.appendText("LOCATION", location) }
        if let geo = event.geo.flatMap(Self.geoValue) { lines.append("GEO", geo) }
        let categories = event.categories.filter { !$0.isEmpty }
        if !categories.isEmpty {
            lines.append("CATEGORIES", categories.map(ICSText.escaped).joined(separator: ","))
        }
        lines.append("SEQUENCE", String(max(0, event.sequence)))
        lines.append("STATUS", event.status.rawValue)
        if let created = event.created { lines.append("CREATED", ICSDateText.utc(created)) }
        if let lastModified = event.lastModified { lines.append("LAST-MODIFIED", ICSDateText.utc(lastModified)) }
        lines.append("END", "VEVENT")
    }

    /// DTEND must follow DTSTART; an all-day event lasts at least its first day.
    private var end: Date {
        guard event.isAllDay else { return max(event.end, event.start) }
        let zone = event.timeZone
        let firstDay = CivilDateTime.clamped(event.start, in: zone).date
        guard CivilDateTime.clamped(event.end, in: zone).date <= firstDay, let nextDay = firstDay.adding(days: 1),
            let midnight = CivilDateTime(date: nextDay, hour: 0, minute: 0, second: 0)
        else { return event.end }
        return midnight.date(in: zone)
    }

    /// Writes a DATE for all-day events, otherwise the wall-clock time with TZID. When `exact` and the wall-clock
    /// time would name another instant (the second 01:30 of a fall-back night reads as the first, RFC 5545
    /// 3.3.5), the UTC form is written instead, so a DTEND never lands before its DTSTART.
    private func appendTime(_ name: String, _ date: Date, exact: Bool = true, into lines: inout ICSContentLines) {
        let zone = event.timeZone
        if event.isAllDay {
            lines.append(name, [("VALUE", "DATE")], ICSDateText.day(date, in: zone))
            return
        }
        let wall = CivilDateTime.clamped(date, in: zone)
        let wholeSecond = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        if ICSTimeZoneCoverage.isUTC(zone) || (exact && wall.date(in: zone) != wholeSecond) {
            lines.append(name, ICSDateText.utc(date))
        } else {
            lines.append(name, [("TZID", zone.identifier)], wall.description)
        }
    }

    /// `latitude;longitude` as plain decimals (no exponent, no locale), or nil when out of range.
    static func geoValue(_ geo: ICSEvent.Geo) -> String? {
        guard (-90...90).contains(geo.latitude), (-180...180).contains(geo.longitude) else { return nil }
        return decimal(geo.latitude) + ";" + decimal(geo.longitude)
    }

    private static func decimal(_ value: Double) -> String {
        let micro = Int((value * 1_000_000).rounded())
        let whole = abs(micro) / 1_000_000
        let fraction = String(abs(micro) % 1_000_000)
        return (micro < 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }
}
