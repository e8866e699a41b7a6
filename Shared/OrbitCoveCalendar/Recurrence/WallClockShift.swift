import Foundation

/// Moving a series' start by wall-clock time in its zone: every instance, exception and
/// answer moves by the same local amount (18:00 to 19:00 is one hour on either side of DST).
package struct WallClockShift: Sendable {
    /// The local amount, in seconds of wall-clock time.
    package let seconds: Double
    package let zone: TimeZone

    package init(from old: Date, to new: Date, in zone: TimeZone) {
        let before = CivilDateTime.clamped(old, in: zone).date(in: .gmt)
        let after = CivilDateTime.clamped(new, in: zone).date(in: .gmt)
        seconds = after.timeIntervalSince(before)
        self.zone = zone
    }

    package var isZero: Bool { seconds == 0 }

    /// A rule's end moved the same way: a UTC bound by its instant, a date by its midnight.
    package func apply(_ bound: RecurrenceRule.Until) -> RecurrenceRule.Until {
        switch bound {
        case .utc(let time): .utc(CivilDateTime.clamped(apply(time.date(in: .gmt)), in: .gmt))
        case .date(let day):
            CivilDateTime(date: day, hour: 0, minute: 0, second: 0).map {
                .date(CivilDateTime.clamped(apply($0.date(in: zone)), in: zone).date)
            } ?? bound
        case .floating: bound
        }
    }

    /// `instant` read on the zone's wall clock, moved by the local amount, and read back (a
    /// time that falls in a spring-forward gap is read as RFC 5545 reads it).
    package func apply(_ instant: Date) -> Date {
        guard !isZero else { return instant }
        let local = CivilDateTime.clamped(instant, in: zone).date(in: .gmt).addingTimeInterval(seconds)
        return CivilDateTime.clamped(local, in: .gmt).date(in: zone)
    }
}
