import Foundation
import OrbitCoveModels

/// When dues fall due: the first due date, then every month or year on the same day (the
/// month's last day when it is shorter: dues of the 31st fall on 28 or 29 February).
enum DuesSchedule {
    /// The periods from the first through the current one (the first not yet past), at most the
    /// last 120.
    static func periods(from start: String, recurrence: DuesRecurrence, through today: String) -> [String] {
        guard recurrence != .none else { return [start] }
        var periods: [String] = []
        var index = 0
        while true {
            let period = date(start, plus: index, recurrence)
            periods.append(period)
            if period >= today || index > 100_000 { break }
            index += 1
        }
        return Array(periods.suffix(120))
    }

    static func isPeriod(_ period: String, from start: String, recurrence: DuesRecurrence) -> Bool {
        guard LedgerDay.isValid(period), period >= start else { return false }
        guard recurrence != .none else { return period == start }
        let (startYear, startMonth, _) = parts(start)
        let (year, month, _) = parts(period)
        let months = (year - startYear) * 12 + (month - startMonth)
        let steps = recurrence == .monthly ? months : months / 12
        if recurrence == .yearly, months % 12 != 0 { return false }
        return date(start, plus: steps, recurrence) == period
    }

    static func date(_ start: String, plus steps: Int, _ recurrence: DuesRecurrence) -> String {
        let (year, month, day) = parts(start)
        let months = (month - 1) + steps * (recurrence == .yearly ? 12 : 1)
        let newYear = year + months / 12
        let newMonth = months % 12 + 1
        return LedgerDay.format(
            year: newYear, month: newMonth, day: min(day, LedgerDay.daysIn(month: newMonth, year: newYear)))
    }

    static func parts(_ day: String) -> (Int, Int, Int) {
        let values = day.split(separator: "-").compactMap { Int($0) }
        return values.count == 3 ? (values[0], values[1], values[2]) : (1970, 1, 1)
    }
}
