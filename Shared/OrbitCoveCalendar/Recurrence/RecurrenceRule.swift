/// An RFC 5545 RRULE, restricted to the parts OrbitCove supports (see README for the list).
///
/// Values are canonical: lists are sorted and de-duplicated and defaults (INTERVAL=1, WKST=MO) are stored
/// as such, so two rules that mean the same thing compare equal and `RecurrenceRule(parsing: r.rfc5545Value)`
/// equals `r`. Every instance passed validation, so expansion never has to handle a bad rule.
package struct RecurrenceRule: Hashable, Sendable {
    package enum Frequency: String, CaseIterable, Hashable, Sendable {
        case daily = "DAILY"
        case weekly = "WEEKLY"
        case monthly = "MONTHLY"
        case yearly = "YEARLY"
    }

    package enum End: Hashable, Sendable {
        case never
        /// Instances generated, counted before EXDATEs remove any (RFC 5545 3.8.5.1).
        case count(Int)
        case until(Until)
    }

    /// The three UNTIL forms. Each bound is inclusive.
    package enum Until: Hashable, Sendable {
        /// `...Z`: an absolute instant, the form RFC 5545 requires with a zoned DTSTART.
        case utc(CivilDateTime)
        /// A wall-clock time in the series' own zone.
        case floating(CivilDateTime)
        /// A DATE: every instance whose local date is on or before this day, whatever its time.
        case date(CivilDate)
    }

    /// One BYDAY entry: `TU` (every Tuesday) or `-1FR` (the last Friday of the month or year).
    package struct WeekdayNumber: Hashable, Comparable, Sendable {
        /// Nil for every such weekday; otherwise ±1...5 within a month or ±1...53 within a year.
        package let ordinal: Int?
        package let weekday: Weekday

        package init(_ weekday: Weekday, ordinal: Int? = nil) {
            self.weekday = weekday
            self.ordinal = ordinal
        }

        package var rfc5545Value: String {
            (ordinal.map(String.init) ?? "") + weekday.rfc5545Code
        }

        /// Week order Monday first, then plain before numbered, then by number: a readable canonical order.
        package static func < (lhs: WeekdayNumber, rhs: WeekdayNumber) -> Bool {
            let left = (lhs.weekday.offset(inWeekStarting: .monday), lhs.ordinal == nil ? 0 : 1, lhs.ordinal ?? 0)
            let right = (rhs.weekday.offset(inWeekStarting: .monday), rhs.ordinal == nil ? 0 : 1, rhs.ordinal ?? 0)
            return left < right
        }
    }

    package let frequency: Frequency
    package let interval: Int
    package let end: End
    package let byMonth: [Int]
    package let byMonthDay: [Int]
    package let byDay: [WeekdayNumber]
    package let bySetPosition: [Int]
    package let weekStart: Weekday

    /// Builds a rule from parts, applying the same checks as parsing.
    package init(
        frequency: Frequency,
        interval: Int = 1,
        end: End = .never,
        byMonth: [Int] = [],
        byMonthDay: [Int] = [],
        byDay: [WeekdayNumber] = [],
        bySetPosition: [Int] = [],
        weekStart: Weekday = .monday
    ) throws(RecurrenceRuleError) {
        self.frequency = frequency
        self.interval = interval
        self.end = end
        self.byMonth = Array(Set(byMonth)).sorted()
        self.byMonthDay = Array(Set(byMonthDay)).sorted()
        self.byDay = Array(Set(byDay)).sorted()
        self.bySetPosition = Array(Set(bySetPosition)).sorted()
        self.weekStart = weekStart
        try validate()
    }
}
