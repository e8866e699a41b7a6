extension RecurrenceRule {
    /// The canonical RRULE value (no `RRULE:` prefix): FREQ first, defaults left out, lists sorted.
    package var rfc5545Value: String {
        var parts = ["FREQ=" + frequency.rawValue]
        if interval != 1 { parts.append("INTERVAL=\(interval)") }
        switch end {
        case .never: break
        case .count(let count): parts.append("COUNT=\(count)")
        case .until(let until): parts.append("UNTIL=" + until.rfc5545Value)
        }
        if !byMonth.isEmpty { parts.append("BYMONTH=" + byMonth.map(String.init).joined(separator: ",")) }
        if !byMonthDay.isEmpty { parts.append("BYMONTHDAY=" + byMonthDay.map(String.init).joined(separator: ",")) }
        if !byDay.isEmpty { parts.append("BYDAY=" + byDay.map(\.rfc5545Value).joined(separator: ",")) }
        if !bySetPosition.isEmpty {
            parts.append("BYSETPOS=" + bySetPosition.map(String.init).joined(separator: ","))
        }
        if weekStart != .monday { parts.append("WKST=" + weekStart.rfc5545Code) }
        return parts.joined(separator: ";")
    }
}

extension RecurrenceRule.Until {
    package var rfc5545Value: String {
        switch self {
        case .utc(let time): time.description + "Z"
        case .floating(let time): time.description
        case .date(let date): date.description
        }
    }
}
