extension RecurrenceRule {
    /// No real schedule needs more; the caps keep every expansion cheap whatever a client sends.
    package static let intervalRange = 1...10_000
    package static let countRange = 1...100_000

    func validate() throws(RecurrenceRuleError) {
        guard Self.intervalRange.contains(interval) else {
            throw outOfRange("INTERVAL", "must be between 1 and \(Self.intervalRange.upperBound)")
        }
        if case .count(let count) = end, !Self.countRange.contains(count) {
            throw outOfRange("COUNT", "must be between 1 and \(Self.countRange.upperBound)")
        }
        guard byMonth.allSatisfy({ (1...12).contains($0) }) else {
            throw outOfRange("BYMONTH", "values must be between 1 and 12")
        }
        guard byMonthDay.allSatisfy({ $0 != 0 && (-31...31).contains($0) }) else {
            throw outOfRange("BYMONTHDAY", "values must be between 1 and 31 or -31 and -1")
        }
        if !byMonthDay.isEmpty && frequency == .weekly {
            throw conflict("BYMONTHDAY", "BYMONTHDAY cannot be used with FREQ=WEEKLY")
        }
        try validateOrdinals()
        // A position past the most days one period can hold never selects anything, so the rule could never
        // produce an instance; saying so beats accepting a series that silently stays empty.
        let daysPerPeriod = [Frequency.daily: 1, .weekly: 7, .monthly: 31, .yearly: 366][frequency] ?? 366
        guard bySetPosition.allSatisfy({ $0 != 0 && (-daysPerPeriod...daysPerPeriod).contains($0) }) else {
            throw outOfRange(
                "BYSETPOS",
                "values must be between 1 and \(daysPerPeriod) or -\(daysPerPeriod) and -1 with FREQ=\(frequency.rawValue)"
            )
        }
        if !bySetPosition.isEmpty && byDay.isEmpty && byMonthDay.isEmpty && byMonth.isEmpty {
            throw conflict("BYSETPOS", "BYSETPOS needs BYDAY, BYMONTHDAY or BYMONTH to select from")
        }
    }

    private func validateOrdinals() throws(RecurrenceRuleError) {
        let ordinals = byDay.compactMap(\.ordinal)
        guard !ordinals.isEmpty else { return }
        let largest: Int
        switch frequency {
        case .daily, .weekly:
            throw conflict("BYDAY", "BYDAY numbers like 2MO are only allowed with FREQ=MONTHLY or FREQ=YEARLY")
        case .monthly:
            largest = 5
        case .yearly:
            // With BYMONTH the number counts within each month, otherwise within the year.
            largest = byMonth.isEmpty ? 53 : 5
        }
        guard ordinals.allSatisfy({ $0 != 0 && (-largest...largest).contains($0) }) else {
            throw outOfRange("BYDAY", "numbers must be between 1 and \(largest) or -\(largest) and -1")
        }
    }

    private func outOfRange(_ part: String, _ detail: String) -> RecurrenceRuleError {
        RecurrenceRuleError(.invalidValue, part: part, "\(part) \(detail)")
    }

    private func conflict(_ part: String, _ message: String) -> RecurrenceRuleError {
        RecurrenceRuleError(.conflictingParts, part: part, message)
    }
}
