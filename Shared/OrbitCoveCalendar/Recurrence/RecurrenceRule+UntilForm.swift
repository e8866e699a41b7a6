import Foundation

extension RecurrenceRule {
    /// The same rule with UNTIL written in the form RFC 5545 requires beside the given DTSTART: a DATE for an
    /// all-day series, a UTC time for one with a zoned start. Other readers then see the bound this engine uses.
    ///
    /// A floating time becomes the instant it names in `timeZone`; a DATE becomes the last second of that local
    /// day (so its evening instances stay in); a UTC time on an all-day series becomes the local date it falls on.
    package func untilForm(timeZone: TimeZone, allDay: Bool) -> RecurrenceRule {
        guard case .until(let until) = end else { return self }
        let converted: Until
        switch (until, allDay) {
        case (.date, true), (.utc, false):
            return self
        case (.floating(let time), true):
            converted = .date(time.date)
        case (.utc(let time), true):
            guard let local = CivilDateTime(time.date(in: .gmt), in: timeZone) else { return self }
            converted = .date(local.date)
        case (.floating(let time), false):
            guard let utc = CivilDateTime(time.date(in: timeZone), in: .gmt) else { return self }
            converted = .utc(utc)
        case (.date(let day), false):
            guard let lastSecond = CivilDateTime(date: day, hour: 23, minute: 59, second: 59),
                let utc = CivilDateTime(lastSecond.date(in: timeZone), in: .gmt)
            else { return self }
            converted = .utc(utc)
        }
        return RecurrenceRule(copying: self, end: .until(converted))
    }

    /// The same rule with another end: a series split in two keeps its rule and ends earlier, or its
    /// remaining part keeps the COUNT it had left.
    package func ending(_ end: End) -> RecurrenceRule {
        RecurrenceRule(copying: self, end: end)
    }

    /// A copy with another end; safe without re-validation because no check involves the UNTIL value.
    private init(copying rule: RecurrenceRule, end: End) {
        frequency = rule.frequency
        interval = rule.interval
        self.end = end
        byMonth = rule.byMonth
        byMonthDay = rule.byMonthDay
        byDay = rule.byDay
        bySetPosition = rule.bySetPosition
        weekStart = rule.weekStart
    }
}
