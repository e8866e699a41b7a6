import Foundation

/// A VTIMEZONE built from Foundation's zone data, correct over `span` and, for zones with regular yearly rules,
/// after it too.
///
/// Google and Apple read the IANA TZID and mostly ignore this text, but Outlook (and any client that does not
/// know the name) builds the zone from it, and Outlook keeps just one STANDARD and one DAYLIGHT rule. So when
/// the zone's latest changes follow a fixed yearly pattern (second Sunday of March at 02:00, ...), each kind is
/// written as one sub-component with an open-ended RRULE, which also stays right for later years. Changes that
/// fit no such pattern (earlier rules, Morocco's Ramadan changes, a zone that dropped DST) are listed one
/// sub-component each. A zone without changes gets a single STANDARD.
struct ICSTimeZoneComponent {
    /// Transitions of one kind that a single yearly RRULE reproduces; `members[0]` gives the DTSTART.
    private struct Run {
        let rule: ZoneTransition.YearlyRule
        let members: [ZoneTransition]
    }

    let timeZone: TimeZone
    let span: ClosedRange<Date>

    func write(into lines: inout ICSContentLines) {
        let year = ICSTimeZoneCoverage.year
        let walkStart = span.lowerBound.addingTimeInterval(-year)
        let transitions = ZoneTransition.all(in: timeZone, after: walkStart, through: span.upperBound)
        lines.append("BEGIN", "VTIMEZONE")
        lines.appendText("TZID", timeZone.identifier)
        if transitions.first.map({ $0.instant > span.lowerBound }) ?? true {
            // Nothing changed in the year before the span, so the offset then has held since before it.
            let offset = transitions.first?.offsetFrom ?? timeZone.secondsFromGMT(for: span.lowerBound)
            Self.writeObservance(
                daylight: timeZone.isDaylightSavingTime(for: walkStart), onset: "19700101T000000", from: offset,
                to: offset, rule: nil, into: &lines)
        }
        let runs = yearlyRuns(transitions)
        let ruled = Set(runs.flatMap { run in run.members.map(\.instant) })
        for transition in transitions where !ruled.contains(transition.instant) {
            Self.writeObservance(
                daylight: transition.isDaylight, onset: transition.onset.description, from: transition.offsetFrom,
                to: transition.offsetTo, rule: nil, into: &lines)
        }
        for run in runs {
            Self.writeObservance(
                daylight: run.rule.isDaylight, onset: run.members[0].onset.description, from: run.rule.offsetFrom,
                to: run.rule.offsetTo, rule: run.rule.recurrenceRule, into: &lines)
        }
        lines.append("END", "VTIMEZONE")
    }

    /// For each kind (daylight, standard), the latest transitions that share one yearly rule in consecutive
    /// years up to the end of the span; empty unless both kinds have such a run of at least two, because a
    /// rule for only one kind would leave clients switching one way and never back.
    private func yearlyRuns(_ transitions: [ZoneTransition]) -> [Run] {
        var runs: [Run] = []
        for daylight in [true, false] {
            let kind = transitions.filter { $0.isDaylight == daylight }
            guard let last = kind.last, last.instant > span.upperBound.addingTimeInterval(-ICSTimeZoneCoverage.year)
            else { return [] }
            var shared = last.yearlyRules
            var first = kind.count - 1
            while first > 0 {
                let candidate = shared.intersection(kind[first - 1].yearlyRules)
                guard !candidate.isEmpty, kind[first - 1].onset.date.year == kind[first].onset.date.year - 1 else {
                    break
                }
                shared = candidate
                first -= 1
            }
            // "Last Sunday" over "fourth Sunday" when both fit: it is what tz rules nearly always say.
            guard kind.count - first >= 2, let rule = shared.min(by: { $0.ordinal < $1.ordinal }),
                rule.recurrenceRule != nil
            else { return [] }
            runs.append(Run(rule: rule, members: Array(kind[first...])))
        }
        return runs
    }

    private static func writeObservance(
        daylight: Bool, onset: String, from: Int, to: Int, rule: RecurrenceRule?, into lines: inout ICSContentLines
    ) {
        let name = daylight ? "DAYLIGHT" : "STANDARD"
        lines.append("BEGIN", name)
        lines.append("DTSTART", onset)
        lines.append("TZOFFSETFROM", ICSDateText.offset(from))
        lines.append("TZOFFSETTO", ICSDateText.offset(to))
        if let rule { lines.append("RRULE", rule.rfc5545Value) }
        lines.append("END", name)
    }
}
