import Foundation
import OrbitCoveCalendar
import OrbitCoveModels

/// When a care reminder's occurrences fall: the days its rule makes from its first day, each at
/// its time of day on the community's clock by the reminders' DST rule (docs/ARCHITECTURE.md,
/// "Time"): a time that does not exist that day is the first instant after it (02:30 on a
/// spring-forward day is 03:00), a time that exists twice is the first. A daily 07:30 reminder
/// is 07:30 local all year.
enum CareSchedule {
    struct Occurrence: Sendable, Equatable {
        var date: CivilDate
        var dueAt: Date
    }

    /// What the rule, first day and time of day of a stored reminder are.
    struct Rule: Sendable {
        var rule: RecurrenceRule
        var startsOn: CivilDate
        var hour: Int
        var minute: Int
        var timeZone: TimeZone
    }

    /// Occurrences due within `from...through`.
    static func occurrences(of reminder: CareStore.ReminderRow, from: Date, through: Date) -> [Occurrence] {
        guard let rule = try? RecurrenceRule.parsed(reminder.recurrenceRule),
            let startsOn = CivilDate(isoText: reminder.startsOn),
            let (hour, minute) = timeOfDay(reminder.timeOfDay)
        else { return [] }
        return occurrences(
            of: Rule(
                rule: rule, startsOn: startsOn, hour: hour, minute: minute,
                timeZone: TimeZone(identifier: reminder.timeZone) ?? .gmt),
            from: from, through: through)
    }

    static func occurrences(of schedule: Rule, from: Date, through: Date) -> [Occurrence] {
        // The rule runs on wall-clock days: expanded from the first day at noon, no day is
        // skipped or doubled by a transition, and each day's time is resolved on its own.
        guard let noon = CivilDateTime(date: schedule.startsOn, hour: 12, minute: 0, second: 0) else { return [] }
        let expansion = RecurrenceExpansion(
            rule: schedule.rule, start: noon.date(in: schedule.timeZone), timeZone: schedule.timeZone)
        let days = expansion.occurrences(
            in: from.addingTimeInterval(-2 * 86_400)..<through.addingTimeInterval(2 * 86_400), limit: 2_000)
        var found: [Occurrence] = []
        for instant in days {
            guard let day = CivilDateTime(instant, in: schedule.timeZone)?.date,
                let time = CivilDateTime(date: day, hour: schedule.hour, minute: schedule.minute, second: 0)
            else { continue }
            let due = time.firstInstant(in: schedule.timeZone)
            if due >= from && due <= through { found.append(Occurrence(date: day, dueAt: due)) }
        }
        return found
    }

    /// Whether `rule` makes any day from `startsOn` on, before the last day a reminder may
    /// start (2200), expanded as ``occurrences(of:from:through:)`` expands it (from local noon
    /// in `timeZone`, which an UNTIL is compared with): a rule that never does (February 30th,
    /// an UNTIL before the first day) would make a reminder that never reminds anyone.
    static func occurs(_ rule: RecurrenceRule, from startsOn: CivilDate, in timeZone: TimeZone) -> Bool {
        guard let noon = CivilDateTime(date: startsOn, hour: 12, minute: 0, second: 0),
            let last = CivilDate(year: 2201, month: 1, day: 1),
            let end = CivilDateTime(date: last, hour: 0, minute: 0, second: 0)
        else { return false }
        let start = noon.date(in: timeZone)
        let expansion = RecurrenceExpansion(rule: rule, start: start, timeZone: timeZone)
        return !expansion.occurrences(in: start..<end.date(in: timeZone), limit: 1).isEmpty
    }

    /// The same for a stored rule and first day; refused as `422 UNSUPPORTED_RECURRENCE` if not.
    static func requireOccurs(_ ruleText: String, from startsOnText: String, in timeZone: String) throws {
        guard let rule = try? RecurrenceRule.parsed(ruleText), let startsOn = CivilDate(isoText: startsOnText),
            occurs(rule, from: startsOn, in: TimeZone(identifier: timeZone) ?? .gmt)
        else {
            throw ReminderErrors.unsupported(
                "recurrenceRule", "The rule makes no day on or after startsOn (\(startsOnText)): it would never remind")
        }
    }

    /// `HH:MM`, 24-hour.
    static func timeOfDay(_ text: String) -> (Int, Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        return (hour, minute)
    }
}
