import Foundation
import OrbitCoveCalendar
import Testing

@Suite struct RecurrenceExpansionTests {
    private let newYork = TimeZone(identifier: "America/New_York") ?? .gmt
    private let berlin = TimeZone(identifier: "Europe/Berlin") ?? .gmt

    private func wall(_ text: String, _ zone: TimeZone) throws -> Date {
        try #require(Self.civil(text)).date(in: zone)
    }

    private func utc(_ texts: [String]) throws -> [Date] {
        try texts.map { try wall($0, .gmt) }
    }

    private static func civil(_ text: String) -> CivilDateTime? {
        let digits = text.compactMap(\.wholeNumberValue)
        guard digits.count == 14 else { return nil }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        return CivilDateTime(
            year: number(0..<4), month: number(4..<6), day: number(6..<8), hour: number(8..<10),
            minute: number(10..<12), second: number(12..<14))
    }

    private func expansion(
        _ rule: String, _ start: String, _ zone: TimeZone, exceptions: Set<Date> = []
    ) throws
        -> RecurrenceExpansion
    {
        RecurrenceExpansion(
            rule: try RecurrenceRule(parsing: rule), start: try wall(start, zone), timeZone: zone,
            exceptions: exceptions)
    }

    /// RFC 5545 3.8.5.3: the same rule gives different days depending on WKST.
    @Test func weekStartChangesBiweeklyDays() throws {
        let monday = try expansion("FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO", "19970805T090000", newYork)
        #expect(
            monday.occurrences(limit: 10)
                == (try utc(["19970805T130000", "19970810T130000", "19970819T130000", "19970824T130000"])))
        let sunday = try expansion("FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU", "19970805T090000", newYork)
        #expect(
            sunday.occurrences(limit: 10)
                == (try utc(["19970805T130000", "19970817T130000", "19970819T130000", "19970831T130000"])))
    }

    /// RFC 5545 3.8.5.3: February 30 is skipped, not moved.
    @Test func invalidDatesAreSkipped() throws {
        let series = try expansion("FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5", "20070115T090000", newYork)
        #expect(
            series.occurrences(limit: 10)
                == (try utc([
                    "20070115T140000", "20070130T140000", "20070215T140000", "20070315T130000", "20070330T130000",
                ])))
    }

    @Test func lastWeekdayOfMonth() throws {
        let series = try expansion("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "20260130T170000", berlin)
        let days = series.occurrences(limit: 6).compactMap { CivilDateTime($0, in: berlin)?.date.description }
        #expect(days == ["20260130", "20260227", "20260331", "20260430", "20260529", "20260630"])
    }

    @Test func wallClockTimeHoldsAcrossDaylightSaving() throws {
        let series = try expansion("FREQ=WEEKLY;BYDAY=TU", "20260317T180000", berlin)
        let instances = series.occurrences(limit: 4)
        #expect(instances.compactMap { CivilDateTime($0, in: berlin)?.hour } == [18, 18, 18, 18])
        // Berlin moves to summer time on 2026-03-29: 17:00Z before, 16:00Z after.
        #expect(instances == (try utc(["20260317T170000", "20260324T170000", "20260331T160000", "20260407T160000"])))
    }

    @Test func skippedLocalTimeUsesTheOffsetBeforeTheJump() throws {
        let series = try expansion("FREQ=WEEKLY;BYDAY=SU", "20260301T023000", newYork)
        // 02:30 does not exist on 2026-03-08; zoneinfo (fold=0) reads it as EST, i.e. 03:30 EDT.
        #expect(series.occurrences(limit: 3) == (try utc(["20260301T073000", "20260308T073000", "20260315T063000"])))
    }

    @Test func repeatedLocalTimeUsesTheFirstOccurrence() throws {
        let series = try expansion("FREQ=WEEKLY", "20261025T013000", newYork)
        // 01:30 happens twice on 2026-11-01; the first (EDT, -4) is chosen.
        #expect(series.occurrences(limit: 3) == (try utc(["20261025T053000", "20261101T053000", "20261108T063000"])))
    }

    @Test func countIsSpentBeforeExceptionsAreRemoved() throws {
        let removed = try wall("20260303T180000", berlin)
        let series = try expansion("FREQ=DAILY;COUNT=3", "20260302T180000", berlin, exceptions: [removed])
        #expect(series.occurrences(limit: 10) == (try utc(["20260302T170000", "20260304T170000"])))
    }

    @Test func exceptionsMatchToTheSecond() throws {
        let removed = try wall("20260303T180000", berlin).addingTimeInterval(0.000_4)
        let series = try expansion("FREQ=DAILY;COUNT=3", "20260302T180000", berlin, exceptions: [removed])
        #expect(series.occurrences(limit: 10).count == 2)
    }

    @Test func untilIsInclusive() throws {
        let series = try expansion("FREQ=DAILY;UNTIL=20260304T170000Z", "20260302T180000", berlin)
        #expect(series.occurrences(limit: 10).count == 3)
        let early = try expansion("FREQ=DAILY;UNTIL=20260304T165959Z", "20260302T180000", berlin)
        #expect(early.occurrences(limit: 10).count == 2)
    }

    @Test func dateUntilKeepsEveryInstanceOnThatLocalDay() throws {
        let series = try expansion("FREQ=WEEKLY;BYDAY=TU;UNTIL=20260630", "20260602T180000", newYork)
        #expect(series.occurrences(limit: 10).last == (try wall("20260630T180000", newYork)))
        let floating = try expansion("FREQ=WEEKLY;BYDAY=TU;UNTIL=20260630T175959", "20260602T180000", newYork)
        #expect(floating.occurrences(limit: 10).last == (try wall("20260623T180000", newYork)))
    }

    /// RFC semantics for a BYDAY that mixes numbered and plain days: the union (python-dateutil returns nothing).
    @Test func mixedNumberedAndPlainWeekdaysAreAUnion() throws {
        let series = try expansion("FREQ=MONTHLY;BYDAY=1MO,FR;COUNT=6", "20260102T090000", .gmt)
        let days = series.occurrences(limit: 10).compactMap { CivilDateTime($0, in: .gmt)?.date.description }
        #expect(days == ["20260102", "20260105", "20260109", "20260116", "20260123", "20260130"])
    }

    @Test func allDaySeriesAtMidnightUTC() throws {
        let series = try expansion("FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=4", "20260131T000000", .gmt)
        let days = series.occurrences(limit: 10).compactMap { CivilDateTime($0, in: .gmt)?.description }
        #expect(days == ["20260131T000000", "20260228T000000", "20260331T000000", "20260430T000000"])
    }

    @Test func leapDayOnlyInLeapYears() throws {
        let series = try expansion("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "20240229T120000", .gmt)
        let years = series.occurrences(limit: 4).compactMap { CivilDateTime($0, in: .gmt)?.date.year }
        #expect(years == [2024, 2028, 2032, 2036])
    }

    /// Jumping to the window must give exactly what walking from DTSTART gives.
    @Test(arguments: [
        "FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,SU;WKST=SU", "FREQ=DAILY;INTERVAL=5", "FREQ=MONTHLY;INTERVAL=7;BYDAY=-1FR",
        "FREQ=YEARLY;INTERVAL=5;BYMONTH=3,10;BYDAY=-1SU", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,WE;BYSETPOS=-1",
        "FREQ=DAILY;BYMONTH=3;UNTIL=20270101T000000Z",
    ])
    func windowJumpMatchesWalkingFromTheStart(rule: String) throws {
        let series = try expansion(rule, "20010304T023000", newYork)
        let window = try wall("20260301T000000", .gmt)..<(try wall("20260601T000000", .gmt))
        let walked = series.occurrences(limit: 10_000).filter { window.contains($0) }
        #expect(series.occurrences(in: window) == walked)
        #expect(!walked.isEmpty)
    }

    @Test(
        .timeLimit(.minutes(1)),
        arguments: [
            "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31", "FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=2",
            "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "FREQ=WEEKLY;INTERVAL=2;BYMONTH=4;BYMONTHDAY=-31;BYDAY=MO",
            "FREQ=MONTHLY;BYDAY=5MO;BYMONTH=2;BYMONTHDAY=1",
        ])
    func ruleThatNeverMatchesEndsQuickly(rule: String) throws {
        guard let parsed = try? RecurrenceRule(parsing: rule) else { return }  // refusing it is fine too
        let series = RecurrenceExpansion(rule: parsed, start: try wall("20260301T100000", .gmt), timeZone: .gmt)
        let started = ContinuousClock.now
        #expect(series.occurrences(limit: 10).isEmpty)
        #expect(series.occurrences(in: Date.distantPast..<Date.distantFuture, limit: 10).isEmpty)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func degenerateArgumentsGiveNothing() throws {
        let series = try expansion("FREQ=DAILY", "20260301T100000", .gmt)
        #expect(series.occurrences(limit: 0).isEmpty)
        let instant = try wall("20260401T000000", .gmt)
        #expect(series.occurrences(in: instant..<instant).isEmpty)
        // Starts outside years 1...9999 (distantPast is 0000-12-30 in the proleptic Gregorian calendar).
        let starts = [3e11, -1e20, .infinity, -.infinity, .nan].map(Date.init(timeIntervalSince1970:)) + [.distantPast]
        for start in starts {
            let extreme = RecurrenceExpansion(rule: series.rule, start: start, timeZone: .gmt)
            #expect(extreme.occurrences(limit: 5).isEmpty)
            #expect(extreme.occurrences(in: .distantPast..<(.distantFuture), limit: 5).isEmpty)
        }
    }

    @Test func unusableExceptionsAndWindowsDoNotTrap() throws {
        let odd = Set([1e300, -.infinity, .nan].map(Date.init(timeIntervalSince1970:)))
        let series = try expansion("FREQ=DAILY", "20260301T100000", .gmt, exceptions: odd)
        #expect(series.occurrences(limit: 3).count == 3)
        let far = Date(timeIntervalSince1970: 1e300)
        #expect(series.occurrences(in: far..<Date(timeIntervalSince1970: .infinity)).isEmpty)
        #expect(series.occurrences(from: far, limit: 3).isEmpty)
    }

    @Test func reportsWhetherStartMatchesTheRule() throws {
        #expect(try expansion("FREQ=WEEKLY;BYDAY=TU", "20260106T180000", berlin).startMatchesRule)
        // 2026-01-07 is a Wednesday: dateutil (and we) start at the next Tuesday; RFC 5545 would count it.
        let offDay = try expansion("FREQ=WEEKLY;BYDAY=TU", "20260107T180000", berlin)
        #expect(!offDay.startMatchesRule)
        #expect(offDay.occurrences(limit: 1) == [try wall("20260113T180000", berlin)])
        // The second 01:30 of a fall-back night: instances use the first, so the start itself is not one.
        let second = RecurrenceExpansion(
            rule: try RecurrenceRule(parsing: "FREQ=DAILY"), start: try wall("20261101T063000", .gmt),
            timeZone: newYork)
        #expect(!second.startMatchesRule)
    }

    @Test func openEndedSeriesStopsAtYear9999() throws {
        let series = try expansion("FREQ=YEARLY;INTERVAL=1000", "20260301T100000", .gmt)
        #expect(series.occurrences(limit: 100).count == 8)
    }
}

@Suite struct UntilFormTests {
    private let newYork = TimeZone(identifier: "America/New_York") ?? .gmt

    @Test(arguments: [
        ("FREQ=DAILY;UNTIL=20260630", false, "FREQ=DAILY;UNTIL=20260701T035959Z"),
        ("FREQ=DAILY;UNTIL=20260630T180000", false, "FREQ=DAILY;UNTIL=20260630T220000Z"),
        ("FREQ=DAILY;UNTIL=20260630T180000Z", false, "FREQ=DAILY;UNTIL=20260630T180000Z"),
        ("FREQ=DAILY;UNTIL=20260701T030000Z", true, "FREQ=DAILY;UNTIL=20260630"),
        ("FREQ=DAILY;UNTIL=20260630T180000", true, "FREQ=DAILY;UNTIL=20260630"),
        ("FREQ=DAILY;UNTIL=20260630", true, "FREQ=DAILY;UNTIL=20260630"),
        ("FREQ=DAILY;COUNT=3", false, "FREQ=DAILY;COUNT=3"),
    ])
    func writesTheFormRFC5545Requires(rule: String, allDay: Bool, expected: String) throws {
        let parsed = try RecurrenceRule(parsing: rule)
        #expect(parsed.untilForm(timeZone: newYork, allDay: allDay).rfc5545Value == expected)
    }
}
