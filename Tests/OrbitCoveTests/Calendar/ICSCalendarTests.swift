import Foundation
import OrbitCoveCalendar
import Testing

@Suite struct ICSCalendarTests {
    private let berlin = TimeZone(identifier: "Europe/Berlin") ?? .gmt
    private let newYork = TimeZone(identifier: "America/New_York") ?? .gmt
    private let tokyo = TimeZone(identifier: "Asia/Tokyo") ?? .gmt

    private func time(
        _ zone: TimeZone, _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0
    )
        throws
        -> Date
    {
        try #require(CivilDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: 0))
            .date(in: zone)
    }

    private func lines(_ calendar: ICSCalendar) -> [String] {
        calendar.serialized().replacingOccurrences(of: "\r\n ", with: "").components(separatedBy: "\r\n")
    }

    @Test func writesFeedHeaderAndOneVTimeZonePerZone() throws {
        let stamp = try time(.gmt, 2026, 1, 15, 10)
        var practice = ICSEvent(
            uid: "p1", start: try time(berlin, 2026, 1, 6, 18), end: try time(berlin, 2026, 1, 6, 19, 30),
            timeZone: berlin, summary: "Practice", stamp: stamp)
        practice.recurrenceRule = try RecurrenceRule(parsing: "FREQ=WEEKLY;BYDAY=TU,TH")
        let second = ICSEvent(
            uid: "p2", start: try time(berlin, 2026, 2, 6, 18), end: try time(berlin, 2026, 2, 6, 19),
            timeZone: berlin, summary: "Friendly", stamp: stamp)
        let utc = ICSEvent(
            uid: "u", start: try time(.gmt, 2026, 2, 6, 18), end: try time(.gmt, 2026, 2, 6, 19), timeZone: .gmt,
            summary: "UTC", stamp: stamp)
        let text = ICSCalendar(name: "Team", events: [practice, second, utc]).serialized()
        #expect(text.hasPrefix("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//OrbitCove//Calendar Feed//EN\r\n"))
        #expect(text.hasSuffix("END:VCALENDAR\r\n"))
        for line in [
            "CALSCALE:GREGORIAN", "METHOD:PUBLISH", "X-WR-CALNAME:Team", "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
            "X-PUBLISHED-TTL:PT1H", "DTSTART;TZID=Europe/Berlin:20260106T180000",
            "DTEND;TZID=Europe/Berlin:20260106T193000", "RRULE:FREQ=WEEKLY;BYDAY=TU,TH", "DTSTART:20260206T180000Z",
            "DTSTAMP:20260115T100000Z", "SEQUENCE:0", "STATUS:CONFIRMED",
        ] {
            #expect(text.contains("\r\n" + line + "\r\n"), "\(line)")
        }
        #expect(text.components(separatedBy: "BEGIN:VTIMEZONE").count == 2)
        #expect(!text.contains("TZID:UTC") && !text.contains("TZID:GMT"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }

    @Test func regularZonesGetOpenEndedYearlyRules() throws {
        let event = ICSEvent(
            uid: "n", start: try time(newYork, 2026, 3, 1, 9), end: try time(newYork, 2026, 3, 1, 10),
            timeZone: newYork, summary: "NY", stamp: try time(.gmt, 2026, 1, 1))
        let text = lines(ICSCalendar(name: "NY", events: [event]))
        #expect(text.contains("RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU"))
        #expect(text.contains("RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU"))
        #expect(text.filter { $0 == "BEGIN:DAYLIGHT" }.count == 1)
        #expect(text.filter { $0 == "BEGIN:STANDARD" }.count == 1)
    }

    @Test func zonesWithoutDaylightSavingGetOneStandard() throws {
        let event = ICSEvent(
            uid: "t", start: try time(tokyo, 2026, 3, 1, 9), end: try time(tokyo, 2026, 3, 1, 10), timeZone: tokyo,
            summary: "Tokyo", stamp: try time(.gmt, 2026, 1, 1))
        let text = lines(ICSCalendar(name: "T", events: [event]))
        #expect(text.filter { $0 == "BEGIN:STANDARD" }.count == 1)
        #expect(!text.contains("BEGIN:DAYLIGHT"))
        #expect(text.contains("TZOFFSETTO:+0900"))
    }

    @Test func allDaySeriesUsesDates() throws {
        var event = ICSEvent(
            uid: "a", start: try time(.gmt, 2026, 1, 5), end: try time(.gmt, 2026, 1, 5), timeZone: .gmt,
            isAllDay: true, summary: "Tournament", stamp: try time(.gmt, 2026, 1, 1))
        event.recurrenceRule = try RecurrenceRule(parsing: "FREQ=WEEKLY;UNTIL=20260330T120000Z")
        event.exceptionDates = [try time(.gmt, 2026, 2, 2)]
        let text = lines(ICSCalendar(name: "A", events: [event]))
        #expect(text.contains("DTSTART;VALUE=DATE:20260105"))
        #expect(text.contains("DTEND;VALUE=DATE:20260106"))
        #expect(text.contains("EXDATE;VALUE=DATE:20260202"))
        #expect(text.contains("RRULE:FREQ=WEEKLY;UNTIL=20260330"))
        #expect(!text.contains("BEGIN:VTIMEZONE"))
    }

    /// A timed event with no end has no DTEND: RFC 5545 has DTEND later than DTSTART (3.8.2.2),
    /// and an event without one ends when it starts (3.6.1). It was written equal to DTSTART.
    @Test func aTimedEventWithoutAnEndHasNoDTEND() throws {
        let start = try time(berlin, 2026, 11, 28, 18)
        var event = ICSEvent(
            uid: "n", start: start, end: start, timeZone: berlin, summary: "Meet", stamp: try time(.gmt, 2026, 1, 1))
        event.recurrenceRule = try RecurrenceRule(parsing: "FREQ=DAILY;COUNT=10")
        let text = lines(ICSCalendar(name: "N", events: [event]))
        #expect(text.contains("DTSTART;TZID=Europe/Berlin:20261128T180000"))
        #expect(!text.contains { $0.hasPrefix("DTEND") })
    }

    @Test func zonedSeriesGetsUTCUntil() throws {
        var event = ICSEvent(
            uid: "z", start: try time(newYork, 2026, 1, 6, 18), end: try time(newYork, 2026, 1, 6, 19),
            timeZone: newYork, summary: "Z", stamp: try time(.gmt, 2026, 1, 1))
        event.recurrenceRule = try RecurrenceRule(parsing: "FREQ=WEEKLY;UNTIL=20260630")
        #expect(lines(ICSCalendar(name: "Z", events: [event])).contains("RRULE:FREQ=WEEKLY;UNTIL=20260701T035959Z"))
    }

    /// 01:30 happens twice on 2026-11-01 in New York; an end in the second 01:xx cannot be written as wall time.
    @Test func endInRepeatedHourIsWrittenInUTC() throws {
        let start = try time(newYork, 2026, 11, 1, 1, 30)  // first 01:30, EDT
        let event = ICSEvent(
            uid: "f", start: start, end: start.addingTimeInterval(3600), timeZone: newYork, summary: "F",
            stamp: try time(.gmt, 2026, 1, 1))
        let text = lines(ICSCalendar(name: "F", events: [event]))
        #expect(text.contains("DTSTART;TZID=America/New_York:20261101T013000"))
        #expect(text.contains("DTEND:20261101T063000Z"))
    }

    @Test func overrideAndCancellation() throws {
        let stamp = try time(.gmt, 2026, 1, 1)
        var master = ICSEvent(
            uid: "m", start: try time(berlin, 2026, 1, 6, 18), end: try time(berlin, 2026, 1, 6, 19),
            timeZone: berlin, summary: "Practice", stamp: stamp)
        master.recurrenceRule = try RecurrenceRule(parsing: "FREQ=WEEKLY")
        var moved = master
        moved.recurrenceRule = nil
        moved.recurrenceID = try time(berlin, 2026, 1, 13, 18)
        moved.start = try time(berlin, 2026, 1, 14, 19)
        moved.end = try time(berlin, 2026, 1, 14, 20)
        moved.sequence = 2
        var cancelled = master
        cancelled.recurrenceID = try time(berlin, 2026, 1, 20, 18)
        cancelled.status = .cancelled
        let text = lines(ICSCalendar(name: "M", events: [master, moved, cancelled]))
        #expect(text.contains("RECURRENCE-ID;TZID=Europe/Berlin:20260113T180000"))
        #expect(text.contains("RECURRENCE-ID;TZID=Europe/Berlin:20260120T180000"))
        #expect(text.contains("SEQUENCE:2"))
        #expect(text.contains("STATUS:CANCELLED"))
        // An override never repeats the master's RRULE.
        #expect(text.filter { $0.hasPrefix("RRULE:FREQ=WEEKLY") }.count == 1)
    }
}
