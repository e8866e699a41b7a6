import Foundation

/// Yields a rule's instances in ascending order, before EXDATEs are removed, and always ends.
///
/// Termination does not rely on COUNT or UNTIL: iteration also stops at the horizon it was given, past year
/// 9999, and after a full Gregorian cycle of empty periods (see `ExpansionPlan.periodsPerCycle`), so a rule that
/// can never match (BYMONTH=2;BYMONTHDAY=30) ends after at most a few hundred thousand cheap steps.
struct RecurrenceIterator: IteratorProtocol {
    private let plan: ExpansionPlan
    private let clock: ZoneClock
    private let until: UntilBound?
    /// No instance can fall on a later local day (horizon or UNTIL); periods starting after it are not scanned.
    private let lastDay: Int?
    private var remaining: Int?
    private var periodIndex: Int
    private var emptyPeriods = 0
    private var pending: [Int] = []
    private var pendingIndex = 0
    private var finished = false

    /// - Parameters:
    ///   - skippingTo: instances before this instant are not needed. Without COUNT, whole periods before it are
    ///     skipped arithmetically; with COUNT they must be walked, because each one uses up part of the count.
    ///   - horizon: instances after this instant are not needed.
    init(rule: RecurrenceRule, start: Date, timeZone: TimeZone, skippingTo: Date? = nil, horizon: Date? = nil) {
        let clock = ZoneClock(timeZone)
        self.clock = clock
        guard let startTime = CivilDateTime(wallSeconds: clock.wallSeconds(atInstant: ZoneClock.seconds(of: start)))
        else {
            plan = ExpansionPlan(rule: rule, start: CivilDateTime.epoch)
            until = nil
            lastDay = nil
            periodIndex = 0
            finished = true
            return
        }
        plan = ExpansionPlan(rule: rule, start: startTime)
        let until = UntilBound(rule.end)
        self.until = until
        if case .count(let count) = rule.end { remaining = count }
        // Local days are at most a day away from UTC ones, and a skipped local time moves by at most an hour,
        // so two days of slack on either side keep every instance that could land in range.
        let horizonDay = horizon.map { clock.localDay(of: $0) + 2 }
        let untilDay = until.map { $0.lastLocalDay(clock: clock) + 2 }
        lastDay = [horizonDay, untilDay].compactMap { $0 }.min()
        if let skippingTo, remaining == nil {
            periodIndex = plan.periodIndex(containing: clock.localDay(of: skippingTo) - 2)
        } else {
            periodIndex = 0
        }
    }

    mutating func next() -> Date? {
        while !finished {
            if remaining == 0 {
                finished = true
            } else if pendingIndex < pending.count {
                let day = pending[pendingIndex]
                pendingIndex += 1
                let wall = Int64(day) * 86_400 + plan.start.secondOfDay
                let instant = clock.instant(atWallSeconds: wall)
                if let until, until.excludes(day: day, wall: wall, instant: instant) {
                    finished = true
                } else {
                    remaining = remaining.map { $0 - 1 }
                    return ZoneClock.date(ofSeconds: instant)
                }
            } else {
                loadNextPeriod()
            }
        }
        return nil
    }

    private mutating func loadNextPeriod() {
        guard emptyPeriods <= plan.periodsPerCycle, let firstDay = plan.firstDay(ofPeriod: periodIndex),
            lastDay.map({ firstDay <= $0 }) ?? true, let days = plan.days(inPeriod: periodIndex)
        else {
            finished = true
            return
        }
        periodIndex += 1
        pending = plan.selectSetPositions(days).filter { $0 >= plan.startDay }
        pendingIndex = 0
        emptyPeriods = pending.isEmpty ? emptyPeriods + 1 : 0
    }
}
