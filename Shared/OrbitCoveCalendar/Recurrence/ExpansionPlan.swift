/// A rule bound to its DTSTART, reduced to lookup tables: which local days each period of the rule selects.
///
/// This is RFC 5545 3.3.10's expand/limit table as python-dateutil's `rrule._iter` implements it, restricted
/// to day-level parts (there is exactly one instance per selected day, at DTSTART's wall-clock time):
///
/// - A period is a calendar year, month, WKST-aligned week or day; period `k` is `k * INTERVAL` after DTSTART's.
///   Like dateutil, the first weekly period runs from DTSTART (not from the week's start) to the end of its
///   week, which matters only for BYSETPOS in that first week.
/// - Each day of a period is kept if it passes every BY* filter present: BYMONTH; BYMONTHDAY (positive or
///   negative); BYDAY, where a plain weekday or a numbered one (`2MO`, counted within the month for MONTHLY
///   and for YEARLY with BYMONTH, else within the year) qualifies.
/// - With no BYDAY and no BYMONTHDAY, DTSTART supplies the default: its weekday for WEEKLY, its day of month
///   for MONTHLY, its month and day for YEARLY. This is how "every month on the 31st" skips short months.
/// - BYSETPOS then picks from the period's kept days; days before DTSTART are dropped last.
struct ExpansionPlan: Sendable {
    let frequency: RecurrenceRule.Frequency
    let interval: Int
    let start: CivilDateTime
    let startDay: Int
    /// First day of DTSTART's WKST-aligned week.
    let startWeekDay: Int
    let startMonthIndex: Int
    /// Index 1...12; nil when any month qualifies.
    let months: [Bool]?
    /// Index 1...31 for BYMONTHDAY=n and for BYMONTHDAY=-n; nil when any day of month qualifies.
    let monthDays: (positive: [Bool], negative: [Bool])?
    /// Index `Weekday.rawValue`; nil when BYDAY is absent.
    let weekdays: [Bool]?
    let numberedWeekdays: [(weekday: Weekday, ordinal: Int)]
    /// Whether numbered weekdays count within the year (YEARLY without BYMONTH) rather than the month.
    let countsWeekdaysInYear: Bool
    let setPositions: [Int]

    init(rule: RecurrenceRule, start: CivilDateTime) {
        frequency = rule.frequency
        interval = rule.interval
        self.start = start
        startDay = start.date.dayNumber
        startWeekDay = startDay - start.date.weekday.offset(inWeekStarting: rule.weekStart)
        startMonthIndex = start.date.year * 12 + start.date.month - 1
        setPositions = rule.bySetPosition
        countsWeekdaysInYear = rule.frequency == .yearly && rule.byMonth.isEmpty

        var byMonth = rule.byMonth
        var byMonthDay = rule.byMonthDay
        var byWeekday = rule.byDay.filter { $0.ordinal == nil }.map(\.weekday)
        if rule.byDay.isEmpty && rule.byMonthDay.isEmpty {
            switch rule.frequency {
            case .daily: break
            case .weekly: byWeekday = [start.date.weekday]
            case .monthly: byMonthDay = [start.date.day]
            case .yearly:
                if byMonth.isEmpty { byMonth = [start.date.month] }
                byMonthDay = [start.date.day]
            }
        }
        months = byMonth.isEmpty ? nil : ExpansionPlan.table(size: 13, marking: byMonth)
        monthDays =
            byMonthDay.isEmpty
            ? nil
            : (
                ExpansionPlan.table(size: 32, marking: byMonthDay.filter { $0 > 0 }),
                ExpansionPlan.table(size: 32, marking: byMonthDay.filter { $0 < 0 }.map { -$0 })
            )
        numberedWeekdays = rule.byDay.compactMap { entry in entry.ordinal.map { (entry.weekday, $0) } }
        let hasWeekdays = !byWeekday.isEmpty || !numberedWeekdays.isEmpty
        weekdays = hasWeekdays ? ExpansionPlan.table(size: 7, marking: byWeekday.map(\.rawValue)) : nil
    }

    /// How many consecutive periods bring the pattern back to where it started: the Gregorian calendar repeats
    /// every 400 years (146097 days, exactly 20871 weeks). A rule with no instance in that many periods in a row
    /// has none ever after, so iteration can stop.
    var periodsPerCycle: Int {
        switch frequency {
        case .yearly: 400
        case .monthly: 4800
        case .weekly: 20872
        case .daily: 146_097
        }
    }

    /// The index of the period holding local day `day`, or 0 if that is before DTSTART's.
    func periodIndex(containing day: Int) -> Int {
        let steps: Int
        switch frequency {
        case .yearly: steps = (CivilDate(dayNumber: day).year - start.date.year).floorDivided(by: interval)
        case .monthly:
            let date = CivilDate(dayNumber: day)
            steps = (date.year * 12 + date.month - 1 - startMonthIndex).floorDivided(by: interval)
        case .weekly: steps = (day - startWeekDay).floorDivided(by: 7 * interval)
        case .daily: steps = (day - startDay).floorDivided(by: interval)
        }
        return max(0, steps)
    }

    /// The first local day of period `index`; nil once that is past year 9999.
    func firstDay(ofPeriod index: Int) -> Int? {
        let day: Int
        switch frequency {
        case .yearly:
            let year = start.date.year + index * interval
            guard year <= 9999 else { return nil }
            day = CivilDate.dayNumber(year: year, month: 1, day: 1)
        case .monthly:
            let monthIndex = startMonthIndex + index * interval
            guard monthIndex / 12 <= 9999 else { return nil }
            day = CivilDate.dayNumber(year: monthIndex / 12, month: monthIndex % 12 + 1, day: 1)
        case .weekly: day = index == 0 ? startDay : startWeekDay + index * 7 * interval
        case .daily: day = startDay + index * interval
        }
        return CivilDate(dayNumber: day).year <= 9999 ? day : nil
    }

    /// The local days of period `index` that the BY* parts keep, ascending, before BYSETPOS;
    /// nil once the period lies past year 9999.
    func days(inPeriod index: Int) -> [Int]? {
        switch frequency {
        case .yearly:
            let year = start.date.year + index * interval
            guard year <= 9999 else { return nil }
            return (1...12).flatMap { month in days(inMonth: month, of: year) }
        case .monthly:
            let monthIndex = startMonthIndex + index * interval
            guard monthIndex / 12 <= 9999 else { return nil }
            return days(inMonth: monthIndex % 12 + 1, of: monthIndex / 12)
        case .weekly:
            let weekStart = startWeekDay + index * 7 * interval
            return days(from: index == 0 ? startDay : weekStart, through: weekStart + 6)
        case .daily:
            let day = startDay + index * interval
            return days(from: day, through: day)
        }
    }

    private func days(inMonth month: Int, of year: Int) -> [Int] {
        guard months?[month] ?? true else { return [] }
        let first = CivilDate.dayNumber(year: year, month: month, day: 1)
        let length = CivilDate.daysIn(month: month, year: year)
        let weekdayRange =
            countsWeekdaysInYear
            ? CivilDate.dayNumber(year: year, month: 1, day: 1)...CivilDate.dayNumber(year: year, month: 12, day: 31)
            : first...(first + length - 1)
        return (0..<length).compactMap { offset in
            keeps(day: first + offset, dayOfMonth: offset + 1, monthLength: length, weekdayRange: weekdayRange)
                ? first + offset : nil
        }
    }

    private func days(from first: Int, through last: Int) -> [Int]? {
        guard CivilDate(dayNumber: first).year <= 9999 else { return nil }
        return (first...last).filter { day in
            let date = CivilDate(dayNumber: day)
            guard months?[date.month] ?? true else { return false }
            // Numbered weekdays are refused for DAILY and WEEKLY, so the range is never consulted here.
            return keeps(
                day: day, dayOfMonth: date.day, monthLength: CivilDate.daysIn(month: date.month, year: date.year),
                weekdayRange: day...day)
        }
    }

    private func keeps(day: Int, dayOfMonth: Int, monthLength: Int, weekdayRange: ClosedRange<Int>) -> Bool {
        if let monthDays, !monthDays.positive[dayOfMonth] && !monthDays.negative[monthLength - dayOfMonth + 1] {
            return false
        }
        guard let weekdays else { return true }
        let weekday = Weekday.of(dayNumber: day)
        if weekdays[weekday.rawValue] { return true }
        return numberedWeekdays.contains { entry in
            guard entry.weekday == weekday else { return false }
            return entry.ordinal > 0
                ? (day - weekdayRange.lowerBound) / 7 + 1 == entry.ordinal
                : (weekdayRange.upperBound - day) / 7 + 1 == -entry.ordinal
        }
    }

    /// BYSETPOS over one period's kept days; positions past either end select nothing.
    func selectSetPositions(_ days: [Int]) -> [Int] {
        guard !setPositions.isEmpty else { return days }
        let picked = setPositions.compactMap { position -> Int? in
            let index = position > 0 ? position - 1 : days.count + position
            return days.indices.contains(index) ? days[index] : nil
        }
        return Set(picked).sorted()
    }

    private static func table(size: Int, marking indices: [Int]) -> [Bool] {
        var table = [Bool](repeating: false, count: size)
        for index in indices where table.indices.contains(index) { table[index] = true }
        return table
    }
}
