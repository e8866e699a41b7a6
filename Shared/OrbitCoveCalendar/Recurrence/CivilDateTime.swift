import Foundation

/// A wall-clock date and time with no zone: what a person reads off a clock in some place.
package struct CivilDateTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    package let date: CivilDate
    package let hour: Int
    package let minute: Int
    package let second: Int

    /// Leap seconds (`60`) are refused: neither `Date` nor python's `datetime` can hold them.
    package init?(date: CivilDate, hour: Int, minute: Int, second: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else { return nil }
        self.date = date
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// `YYYYMMDDTHHMMSS` (RFC 5545's basic form, as the calendar tools write it), or nil.
    package init?(basicFormat text: String) {
        let digits = Array(text.utf8).filter { $0 >= 0x30 && $0 <= 0x39 }.map { Int($0 - 0x30) }
        guard digits.count == 14 else { return nil }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        self.init(
            year: number(0..<4), month: number(4..<6), day: number(6..<8), hour: number(8..<10),
            minute: number(10..<12), second: number(12..<14))
    }

    package init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard let date = CivilDate(year: year, month: month, day: day) else { return nil }
        self.init(date: date, hour: hour, minute: minute, second: second)
    }

    /// Seconds since 1970-01-01T00:00:00 on this wall clock; also the UTC instant if the clock is UTC's.
    init?(wallSeconds: Int64) {
        let day = Int(wallSeconds.floorDivided(by: 86_400))
        let secondOfDay = Int(wallSeconds.floorModulo(86_400))
        let date = CivilDate(dayNumber: day)
        guard (1...9999).contains(date.year) else { return nil }
        self.init(date: date, secondOfDay: secondOfDay)
    }

    /// `secondOfDay` must be in 0..<86400; callers derive it with `floorModulo(86_400)`.
    private init(date: CivilDate, secondOfDay: Int) {
        self.date = date
        self.hour = secondOfDay / 3600
        self.minute = secondOfDay / 60 % 60
        self.second = secondOfDay % 60
    }

    /// The wall-clock reading of `instant` in `timeZone` (sub-second part dropped).
    package init?(_ instant: Date, in timeZone: TimeZone) {
        self.init(wallSeconds: ZoneClock(timeZone).wallSeconds(atInstant: ZoneClock.seconds(of: instant)))
    }

    /// 1970-01-01T00:00:00, a placeholder where no real time is available.
    static let epoch = CivilDateTime(date: CivilDate(dayNumber: 0), secondOfDay: 0)

    var secondOfDay: Int64 {
        Int64(hour * 3600 + minute * 60 + second)
    }

    /// Like `init(_:in:)`, but an instant outside years 1...9999 is pinned to the nearest end of that range.
    package static func clamped(_ instant: Date, in timeZone: TimeZone) -> CivilDateTime {
        let wall = ZoneClock(timeZone).wallSeconds(atInstant: ZoneClock.seconds(of: instant))
        let lowest = Int64(CivilDate.dayNumber(year: 1, month: 1, day: 1)) * 86_400
        let highest = Int64(CivilDate.dayNumber(year: 9999, month: 12, day: 31)) * 86_400 + 86_399
        return CivilDateTime(wallSeconds: min(max(wall, lowest), highest)) ?? .epoch
    }

    var wallSeconds: Int64 {
        Int64(date.dayNumber) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// The instant this wall-clock time names in `timeZone`.
    ///
    /// A time repeated when clocks go back resolves to its first (daylight) occurrence, and a time skipped when
    /// clocks go forward is read with the offset in force before the jump (02:30 on a New York spring-forward
    /// day is 03:30 EDT). This is Python's `zoneinfo` with `fold=0`, which python-dateutil's rrule relies on.
    package func date(in timeZone: TimeZone) -> Date {
        ZoneClock.date(ofSeconds: ZoneClock(timeZone).instant(atWallSeconds: wallSeconds))
    }

    /// The instant this wall-clock time names in `timeZone` by the reminders' rule: a repeated
    /// time is its first occurrence, a skipped one the first instant after it (02:30 on a
    /// spring-forward day fires at 03:00). Recurring events keep RFC 5545's reading
    /// (``date(in:)``), which every calendar reading our feeds computes too.
    package func firstInstant(in timeZone: TimeZone) -> Date {
        ZoneClock.date(ofSeconds: ZoneClock(timeZone).firstInstant(atWallSeconds: wallSeconds))
    }

    package var description: String {
        date.description + "T" + Digits.pad(hour, 2) + Digits.pad(minute, 2) + Digits.pad(second, 2)
    }

    package static func < (lhs: CivilDateTime, rhs: CivilDateTime) -> Bool {
        lhs.wallSeconds < rhs.wallSeconds
    }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    func floorModulo(_ divisor: Int64) -> Int64 {
        self - floorDivided(by: divisor) * divisor
    }
}
