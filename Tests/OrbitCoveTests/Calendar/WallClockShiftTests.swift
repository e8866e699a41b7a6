import Foundation
import OrbitCoveCalendar
import Testing

/// A series' new start moves everything of it by the same wall-clock amount in its zone, not by
/// the same number of seconds: across a DST change the two differ by the change.
@Suite struct WallClockShiftTests {
    private let berlin = TimeZone(identifier: "Europe/Berlin") ?? .gmt
    private let newYork = TimeZone(identifier: "America/New_York") ?? .gmt

    private func utc(_ text: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: text))
    }

    /// Moved from the last Tuesday before Berlin's spring change to the first after (a week of
    /// wall clock, a week less an hour of seconds): an exception before the change moves a
    /// week to the same 18:00, and one after it too.
    @Test func aMoveAcrossDSTKeepsTheLocalTime() throws {
        let (old, new) = (try utc("2026-03-24T17:00:00Z"), try utc("2026-03-31T16:00:00Z"))
        let move = WallClockShift(from: old, to: new, in: berlin)
        #expect(move.seconds == 7 * 86_400 && !move.isZero)
        #expect(new.timeIntervalSince(old) == 7 * 86_400 - 3_600)
        #expect(move.apply(try utc("2026-03-10T17:00:00Z")) == (try utc("2026-03-17T17:00:00Z")))
        #expect(move.apply(try utc("2026-04-07T16:00:00Z")) == (try utc("2026-04-14T16:00:00Z")))
    }

    @Test func noMoveChangesNothing() throws {
        let start = try utc("2026-10-20T16:00:00Z")
        let move = WallClockShift(from: start, to: start, in: berlin)
        #expect(move.isZero)
        let instant = try utc("2026-11-03T17:00:00Z").addingTimeInterval(0.25)
        #expect(move.apply(instant) == instant)
        let day = try #require(CivilDate(isoText: "2026-11-30"))
        #expect(move.apply(.date(day)) == .date(day))
    }

    /// An end date moves by whole days only when its midnight does; a UTC end by its instant;
    /// a floating end (never stored: rules are kept with UTC or date ends) stays.
    @Test func aRulesEndMovesWithIt() throws {
        let hourLater = WallClockShift(
            from: try utc("2026-10-20T16:00:00Z"), to: try utc("2026-10-20T17:00:00Z"), in: berlin)
        let day = try #require(CivilDate(isoText: "2026-11-30"))
        #expect(hourLater.apply(.date(day)) == .date(day))
        let dayLater = WallClockShift(
            from: try utc("2026-10-20T16:00:00Z"), to: try utc("2026-10-21T16:00:00Z"), in: berlin)
        #expect(dayLater.apply(.date(day)) == .date(try #require(CivilDate(isoText: "2026-12-01"))))
        let end = CivilDateTime.clamped(try utc("2026-11-30T23:00:00Z"), in: .gmt)
        #expect(
            hourLater.apply(.utc(end)) == .utc(CivilDateTime.clamped(try utc("2026-12-01T00:00:00Z"), in: .gmt)))
        #expect(hourLater.apply(.floating(end)) == .floating(end))
    }

    /// Moved an hour later, 01:30 on New York's spring-forward day becomes 02:30, which does not
    /// exist: read as RFC 5545 reads it, with the offset before the change (03:30 EDT).
    @Test func aMoveIntoTheSpringGapIsReadAsRFC5545Does() throws {
        let move = WallClockShift(
            from: try utc("2026-03-01T06:30:00Z"), to: try utc("2026-03-01T07:30:00Z"), in: newYork)
        #expect(move.apply(try utc("2026-03-08T06:30:00Z")) == (try utc("2026-03-08T07:30:00Z")))
    }
}
