import Foundation
import OrbitCoveCalendar

extension EventInput {
    /// What is wrong with a rule's UNTIL, if anything: it must take the form RFC 5545 (3.3.10)
    /// requires beside the series' start, a UTC date-time for a timed series and a date for an
    /// all-day one (another form is refused rather than read one way and shown another), and
    /// lie within the times the calendar takes.
    static func untilProblem(_ rule: RecurrenceRule, allDay: Bool) -> String? {
        guard case .until(let until) = rule.end else { return nil }
        let bound: Date?
        switch (until, allDay) {
        case (.utc(let time), false): bound = time.date(in: .gmt)
        case (.date(let day), true): bound = CivilDateTime(date: day, hour: 0, minute: 0, second: 0)?.date(in: .gmt)
        case (_, false): return "UNTIL must be a UTC time ending in Z (such as 20260630T215959Z) for a timed series"
        case (_, true): return "UNTIL must be a date (such as 20260630) for an all-day series"
        }
        guard let bound, supported.contains(bound) else { return "UNTIL must be in the years 1900 to 2199 (UTC)" }
        return nil
    }
}
