/// A day in the proleptic Gregorian calendar, with no time zone attached.
///
/// Recurrence is defined on wall-clock calendars, so the engine works on plain day numbers rather than
/// on `Date`: that is what python-dateutil does (`date.toordinal()`), it is exact, and it sidesteps
/// `Calendar`'s own choices for Julian dates before 1582 and for skipped or repeated local times.
package struct CivilDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    package let year: Int
    package let month: Int
    package let day: Int

    /// Only years 1...9999 are representable, as in RFC 5545's four-digit DATE and Python's `datetime`.
    package init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...CivilDate.daysIn(month: month, year: year)).contains(day)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (negative before). Inverse of `dayNumber`.
    init(dayNumber: Int) {
        // Howard Hinnant's civil_from_days; eras are 400-year cycles of 146097 days.
        let shifted = dayNumber + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchMonth = (5 * dayOfYear + 2) / 153
        self.day = dayOfYear - (153 * marchMonth + 2) / 5 + 1
        self.month = marchMonth < 10 ? marchMonth + 3 : marchMonth - 9
        self.year = yearOfEra + era * 400 + (self.month <= 2 ? 1 : 0)
    }

    /// The day `count` days later (earlier if negative); nil outside years 1...9999.
    package func adding(days count: Int) -> CivilDate? {
        let date = CivilDate(dayNumber: dayNumber + count)
        return (1...9999).contains(date.year) ? date : nil
    }

    package var dayNumber: Int {
        CivilDate.dayNumber(year: year, month: month, day: day)
    }

    package var weekday: Weekday {
        Weekday.of(dayNumber: dayNumber)
    }

    package var description: String {
        Digits.pad(year, 4) + Digits.pad(month, 2) + Digits.pad(day, 2)
    }

    /// `YYYY-MM-DD`, as JSON and ISO 8601 write a date.
    package var isoText: String {
        Digits.pad(year, 4) + "-" + Digits.pad(month, 2) + "-" + Digits.pad(day, 2)
    }

    /// Reads `YYYY-MM-DD` (a real day, years 1...9999).
    package init?(isoText text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), year >= 1
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    package static func < (lhs: CivilDate, rhs: CivilDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    static func dayNumber(year: Int, month: Int, day: Int) -> Int {
        let marchYear = month <= 2 ? year - 1 : year
        let era = (marchYear >= 0 ? marchYear : marchYear - 399) / 400
        let yearOfEra = marchYear - era * 400
        let marchMonth = (month + 9) % 12
        let dayOfYear = (153 * marchMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// Zero-padded decimal formatting without `String(format:)`, which is locale- and platform-sensitive.
enum Digits {
    static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

extension Int {
    /// Division rounding toward negative infinity, for period arithmetic before DTSTART.
    func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    func floorModulo(_ divisor: Int) -> Int {
        self - floorDivided(by: divisor) * divisor
    }
}
