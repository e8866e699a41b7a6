import Foundation
import OrbitCoveCalendar
import OrbitCoveInfra
import Testing

@testable import RemindersService

/// The one rule for a time of day (docs/ARCHITECTURE.md, "Time"): a time that does not exist
/// on a DST day fires at the first instant after it, a time that exists twice fires once, at
/// the first. Checked in Berlin and New York across both transitions of 2027, and a daily
/// 07:30 reminder that stays 07:30 local all year.
@Suite struct ReminderTimeTests {
    static func occurrences(
        _ rule: String, at time: String, from start: String, zone: String, days: Int
    ) throws -> [CareSchedule.Occurrence] {
        let timeZone = try #require(TimeZone(identifier: zone))
        let (hour, minute) = try #require(CareSchedule.timeOfDay(time))
        let first = try #require(CivilDate(isoText: start))
        let from = try #require(CivilDateTime(date: first, hour: 0, minute: 0, second: 0)).date(in: timeZone)
        return CareSchedule.occurrences(
            of: .init(
                rule: try RecurrenceRule(parsing: rule), startsOn: first, hour: hour, minute: minute, timeZone: timeZone
            ),
            from: from, through: from.addingTimeInterval(Double(days) * 86_400))
    }

    static func utc(_ text: String) throws -> Date { try #require(JSONCoding.parseTimestamp(text)) }

    /// (zone, day clocks jump forward, 02:30 then, the jump's instant in UTC)
    @Test(arguments: [
        ("Europe/Berlin", "2027-03-28", "2027-03-28T01:00:00Z"),
        ("America/New_York", "2027-03-14", "2027-03-14T07:00:00Z"),
    ])
    func aTimeThatDoesNotExistFiresAtTheFirstInstantAfterIt(zone: String, day: String, jump: String) throws {
        let found = try Self.occurrences("FREQ=DAILY", at: "02:30", from: day, zone: zone, days: 2)
        let first = try #require(found.first)
        #expect(first.date.isoText == day)
        #expect(first.dueAt == (try Self.utc(jump)))  // 03:00 local, the moment 02:00 became 03:00
        // The day after, 02:30 exists again.
        let next = try #require(found.dropFirst().first)
        #expect(next.dueAt.timeIntervalSince(first.dueAt) == 86_400 - 1800)
    }

    /// (zone, day clocks go back, the repeated time, its first occurrence in UTC)
    @Test(arguments: [
        ("Europe/Berlin", "2027-10-31", "02:30", "2027-10-31T00:30:00Z"),
        ("America/New_York", "2027-11-07", "01:30", "2027-11-07T05:30:00Z"),
    ])
    func aTimeThatExistsTwiceFiresOnceAtTheFirst(zone: String, day: String, time: String, first: String) throws {
        let found = try Self.occurrences("FREQ=DAILY", at: time, from: day, zone: zone, days: 1)
        #expect(found.filter { $0.date.isoText == day }.map(\.dueAt) == [try Self.utc(first)])
    }

    @Test(arguments: ["Europe/Berlin", "America/New_York"])
    func aDaily0730ReminderStaysAt0730LocalAllYear(zone: String) throws {
        let found = try Self.occurrences("FREQ=DAILY", at: "07:30", from: "2027-01-01", zone: zone, days: 365)
        #expect(found.count == 365)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: zone))
        for occurrence in found {
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: occurrence.dueAt)
            #expect(parts.hour == 7 && parts.minute == 30, "\(occurrence.date)")
            let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
            #expect(day == occurrence.date.isoText)
        }
        // Consecutive days: 24 hours apart but across a transition (23 or 25).
        let gaps = Set(zip(found, found.dropFirst()).map { $1.dueAt.timeIntervalSince($0.dueAt) / 3600 })
        #expect(gaps == [23, 24, 25])
    }

    @Test func everyDayOfARuleIsOneOccurrenceWhateverTheZone() throws {
        // Weekly on Sundays, the days clocks change in New York: both are there, once each.
        let found = try Self.occurrences(
            "FREQ=WEEKLY;BYDAY=SU", at: "02:30", from: "2027-03-07", zone: "America/New_York", days: 250)
        let days = found.map(\.date.isoText)
        #expect(days.contains("2027-03-14") && days.contains("2027-11-07"))
        #expect(Set(days).count == days.count)
    }
}
