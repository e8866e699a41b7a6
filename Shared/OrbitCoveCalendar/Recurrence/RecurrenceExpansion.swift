import Foundation

/// A recurring series: a rule anchored at a first start in an IANA zone, minus its EXDATEs.
///
/// Instances keep DTSTART's wall-clock time in `timeZone` across DST changes (an 18:00 practice stays 18:00
/// local). A local time that does not exist or happens twice is resolved like Python's zoneinfo with `fold=0`
/// (see `CivilDateTime.date(in:)`).
///
/// The instance set is python-dateutil's: DTSTART is the first instance only if it matches the rule (RFC 5545
/// says it always counts; OrbitCove only stores DTSTARTs that match, where the two agree). COUNT counts
/// instances before EXDATEs remove any; UNTIL is inclusive; impossible dates (February 30) are skipped.
///
/// All-day series: pass midnight of the first day in some zone (UTC is simplest) and read each result as a
/// date in that same zone.
package struct RecurrenceExpansion: Sendable {
    package let rule: RecurrenceRule
    package let start: Date
    package let timeZone: TimeZone
    /// Starts of removed instances, matched to the second.
    package let exceptions: Set<Date>
    private let exceptionSeconds: Set<Int64>

    package init(rule: RecurrenceRule, start: Date, timeZone: TimeZone, exceptions: Set<Date> = []) {
        self.rule = rule
        self.start = start
        self.timeZone = timeZone
        self.exceptions = exceptions
        // Rounded, so a stored EXDATE that picked up sub-second noise still matches its whole-second instance.
        exceptionSeconds = Set(exceptions.map { ZoneClock.seconds(of: $0, rule: .toNearestOrAwayFromZero) })
    }

    /// Instances starting in `window` (start inclusive, end exclusive), ascending, at most `limit` of them.
    ///
    /// To find instances that overlap a window, widen its start by the event's duration. Without COUNT this
    /// jumps straight to the window, so its cost does not grow with the age of the series.
    package func occurrences(in window: Range<Date>, limit: Int = 10_000) -> [Date] {
        collect(from: window.lowerBound, before: window.upperBound, limit: limit)
    }

    /// The first `limit` instances starting at or after `date` (from the beginning when nil).
    package func occurrences(from date: Date? = nil, limit: Int) -> [Date] {
        collect(from: date, before: nil, limit: limit)
    }

    /// Whether `start` is itself the first instance. When it is not, RFC 5545 would still count it as one and
    /// python-dateutil (and this engine) would not, so an API can refuse such a series rather than pick a side.
    package var startMatchesRule: Bool {
        var iterator = RecurrenceIterator(rule: rule, start: start, timeZone: timeZone)
        return iterator.next().map { ZoneClock.seconds(of: $0) == ZoneClock.seconds(of: start) } ?? false
    }

    private func collect(from lower: Date?, before upper: Date?, limit: Int) -> [Date] {
        guard limit > 0, lower.flatMap({ lower in upper.map { lower < $0 } }) ?? true else { return [] }
        var iterator = RecurrenceIterator(
            rule: rule, start: start, timeZone: timeZone, skippingTo: lower, horizon: upper)
        var found: [Date] = []
        while found.count < limit, let instant = iterator.next() {
            if let upper, instant >= upper { break }
            if let lower, instant < lower { continue }
            if exceptionSeconds.contains(ZoneClock.seconds(of: instant)) { continue }
            found.append(instant)
        }
        return found
    }
}
