/// A day of the week, numbered from Sunday as `Calendar` does (`rawValue + 1` is `Calendar`'s weekday).
package enum Weekday: Int, CaseIterable, Hashable, Comparable, Sendable {
    case sunday, monday, tuesday, wednesday, thursday, friday, saturday

    /// The two-letter code used by BYDAY and WKST.
    package var rfc5545Code: String {
        switch self {
        case .sunday: "SU"
        case .monday: "MO"
        case .tuesday: "TU"
        case .wednesday: "WE"
        case .thursday: "TH"
        case .friday: "FR"
        case .saturday: "SA"
        }
    }

    package init?(rfc5545Code code: some StringProtocol) {
        guard let match = Weekday.allCases.first(where: { $0.rfc5545Code == code }) else { return nil }
        self = match
    }

    /// 1970-01-01, day number 0, was a Thursday.
    static func of(dayNumber: Int) -> Weekday {
        Weekday(rawValue: (dayNumber + Weekday.thursday.rawValue).floorModulo(7)) ?? .sunday
    }

    /// Position in a week that begins on `weekStart` (0...6).
    func offset(inWeekStarting weekStart: Weekday) -> Int {
        (rawValue - weekStart.rawValue).floorModulo(7)
    }

    package static func < (lhs: Weekday, rhs: Weekday) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
