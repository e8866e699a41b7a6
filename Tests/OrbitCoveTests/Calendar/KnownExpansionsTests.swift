import CoreService
import Foundation
import OrbitCoveCalendar
import Testing

/// A remembered span answers exactly what expanding the window itself would; a window outside
/// it, or a new version of the series, expands again.
@Suite struct KnownExpansionsTests {
    @Test(arguments: [
        "FREQ=WEEKLY;BYDAY=TU,TH", "FREQ=DAILY;INTERVAL=3", "FREQ=MONTHLY;BYDAY=-1FR", "FREQ=WEEKLY;COUNT=30",
        "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU",
    ])
    func aRememberedSpanAnswersAsTheExpansionWould(rule: String) throws {
        let zone = try #require(TimeZone(identifier: "Europe/Berlin"))
        let start = Date(timeIntervalSince1970: 1_760_371_200)  // 2025-10-13T16:00:00Z
        let expansion = RecurrenceExpansion(
            rule: try RecurrenceRule(parsing: rule), start: start, timeZone: zone,
            exceptions: [start.addingTimeInterval(7 * 86_400)])
        let known = KnownExpansions(limit: 10_000)
        let series = UUID()
        let day: TimeInterval = 86_400
        var expanded = 0
        func starts(_ window: Range<Date>, sequence: Int = 0, most: Int = 10_001) -> [Date] {
            known.starts(of: series, sequence: sequence, updatedAt: start, in: window, most: most) {
                expanded += 1
                return expansion
            }
        }
        var from = start.addingTimeInterval(-10 * day)
        for step in [0, 1, 7, 30, 45, 200, 1] {
            from = from.addingTimeInterval(Double(step) * day)
            let window = from..<from.addingTimeInterval(42 * day)
            #expect(starts(window) == expansion.occurrences(in: window, limit: 10_001))
        }
        // Moves of 1 to 45 days stay in the first span; the move of 200 days needs another.
        #expect(expanded == 2)
        let window = from..<from.addingTimeInterval(42 * day)
        #expect(starts(window, most: 2) == Array(expansion.occurrences(in: window, limit: 10_001).prefix(2)))
        #expect(expanded == 2)
        // A new version of the series is expanded afresh.
        #expect(starts(window, sequence: 1) == expansion.occurrences(in: window, limit: 10_001))
        #expect(expanded == 3)
    }
}
