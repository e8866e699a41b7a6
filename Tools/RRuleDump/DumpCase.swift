import Foundation
import OrbitCoveCalendar

/// One expansion request from Compare/compare.py. Times are `YYYYMMDDTHHMMSS` (local to `tz`) for `dtstart`
/// and `YYYYMMDDTHHMMSSZ` for the window and EXDATEs.
struct DumpCase: Decodable {
    var id: String
    var rule: String
    var dtstart: String
    var tz: String
    var windowFrom: String?
    var windowTo: String?
    var limit: Int
    var exdates: [String]?
}

struct DumpResult: Encodable {
    var id: String
    var occurrences: [String]?
    var error: String?
}

enum DumpError: Error {
    case badInput(String)
}

extension DumpCase {
    func run() -> DumpResult {
        do {
            let rule = try RecurrenceRule(parsing: rule)
            guard let zone = TimeZone(identifier: tz) else { throw DumpError.badInput("unknown zone \(tz)") }
            let start = try UTCText.wallClock(dtstart).date(in: zone)
            let expansion = RecurrenceExpansion(
                rule: rule, start: start, timeZone: zone,
                exceptions: Set(try (exdates ?? []).map(UTCText.instant)))
            let dates: [Date]
            if let windowTo {
                let from = try windowFrom.map(UTCText.instant) ?? start
                dates = expansion.occurrences(in: from..<(try UTCText.instant(windowTo)), limit: limit)
            } else {
                dates = expansion.occurrences(from: try windowFrom.map(UTCText.instant), limit: limit)
            }
            return DumpResult(id: id, occurrences: dates.map(UTCText.format))
        } catch let error as RecurrenceRuleError {
            return DumpResult(id: id, error: "\(error.code): \(error.message)")
        } catch {
            return DumpResult(id: id, error: "\(error)")
        }
    }
}

enum UTCText {
    static func wallClock(_ text: String) throws -> CivilDateTime {
        guard let time = CivilDateTime(basicFormat: text) else { throw DumpError.badInput("bad time \(text)") }
        return time
    }

    static func instant(_ text: String) throws -> Date {
        try wallClock(text).date(in: .gmt)
    }

    static func format(_ date: Date) -> String {
        (CivilDateTime(date, in: .gmt)?.description ?? "?") + "Z"
    }
}
