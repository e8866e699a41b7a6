import Foundation

/// One change of UTC offset in a zone, as Foundation reports it.
struct ZoneTransition {
    let instant: Date
    let offsetFrom: Int
    let offsetTo: Int
    let isDaylight: Bool

    /// When the change happens on the clock it replaces: what a VTIMEZONE sub-component's DTSTART holds.
    var onset: CivilDateTime {
        CivilDateTime.clamped(instant.addingTimeInterval(TimeInterval(offsetFrom)), in: .gmt)
    }

    /// Offset changes in `timeZone` after `start`, up to and including `end`.
    ///
    /// `nextDaylightSavingTimeTransition` also reports changes of standard offset; a reported change that
    /// leaves the offset as it was (a renamed abbreviation) is dropped.
    static func all(in timeZone: TimeZone, after start: Date, through end: Date) -> [ZoneTransition] {
        var transitions: [ZoneTransition] = []
        var cursor = start
        while let next = timeZone.nextDaylightSavingTimeTransition(after: cursor), next <= end, next > cursor {
            let before = timeZone.secondsFromGMT(for: next.addingTimeInterval(-1))
            let after = timeZone.secondsFromGMT(for: next)
            if before != after {
                transitions.append(
                    ZoneTransition(
                        instant: next, offsetFrom: before, offsetTo: after,
                        isDaylight: timeZone.isDaylightSavingTime(for: next)))
            }
            cursor = next
        }
        return transitions
    }

    /// The yearly rules this transition fits, as `FREQ=YEARLY;BYMONTH=m;BYDAY=nDD` would state them: the n-th
    /// weekday of the month, and also the last one when it is.
    var yearlyRules: Set<YearlyRule> {
        let onset = self.onset
        let date = onset.date
        let daysInMonth = (28...31).last { CivilDate(year: date.year, month: date.month, day: $0) != nil } ?? 28
        let ordinals = [(date.day - 1) / 7 + 1] + (date.day + 7 > daysInMonth ? [-1] : [])
        return Set(
            ordinals.map { ordinal in
                YearlyRule(
                    month: date.month, weekday: date.weekday, ordinal: ordinal, hour: onset.hour,
                    minute: onset.minute, second: onset.second, offsetFrom: offsetFrom, offsetTo: offsetTo,
                    isDaylight: isDaylight)
            })
    }

    /// A transition that recurs every year on the same weekday rule and clock time, between the same offsets.
    struct YearlyRule: Hashable {
        let month: Int
        let weekday: Weekday
        let ordinal: Int
        let hour: Int
        let minute: Int
        let second: Int
        let offsetFrom: Int
        let offsetTo: Int
        let isDaylight: Bool

        var recurrenceRule: RecurrenceRule? {
            try? RecurrenceRule(
                frequency: .yearly, byMonth: [month], byDay: [.init(weekday, ordinal: ordinal)])
        }
    }
}
