import Foundation
import OrbitCoveCalendar

/// Times what the API does per calendar page: 200 weekly series begun years ago, expanded over six weeks.
enum Benchmark {
    static func run() throws {
        let zones = ["America/New_York", "Europe/Berlin", "Asia/Tokyo"].compactMap(TimeZone.init(identifier:))
        let rules = try [
            "FREQ=WEEKLY;BYDAY=TU,TH", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SU;WKST=SU", "FREQ=WEEKLY",
            "FREQ=WEEKLY;UNTIL=20300101T000000Z;BYDAY=SA",
        ].map { try RecurrenceRule(parsing: $0) }
        let series = (0..<200).compactMap { index -> RecurrenceExpansion? in
            let zone = zones[index % zones.count]
            guard
                let start = CivilDateTime(
                    year: 2019 + index % 5, month: 1 + index % 12, day: 1 + index % 28,
                    hour: 17 + index % 3, minute: 30, second: 0)?.date(in: zone)
            else { return nil }
            return RecurrenceExpansion(rule: rules[index % rules.count], start: start, timeZone: zone)
        }
        let windowStart = Date(timeIntervalSince1970: 1_772_323_200)  // 2026-03-01, across the DST changes
        let window = windowStart..<windowStart.addingTimeInterval(42 * 86_400)
        var total = 0
        let clock = ContinuousClock()
        let rounds = 20
        let elapsed = clock.measure {
            for _ in 0..<rounds {
                for expansion in series { total += expansion.occurrences(in: window).count }
            }
        }
        let perSeries = elapsed / (rounds * series.count)
        print(
            "\(series.count) series x \(rounds) rounds, \(total / rounds) instances per round, \(perSeries) per series")
    }
}
