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
        let digits = Array(text.utf8).filter { $0 >= 0x30 && $0 <= 0x39 }.map { Int($0 - 0x30) }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        guard digits.count == 14,
            let time = CivilDateTime(
                year: number(0..<4), month: number(4..<6), day: number(6..<8), hour: number(8..<10),
                minute: number(10..<12), second: number(12..<14))
        else { throw DumpError.badInput("bad time \(text)") }
        return time
    }

    static func instant(_ text: String) throws -> Date {
        try wallClock(text).date(in: .gmt)
    }

    static func format(_ date: Date) -> String {
        (CivilDateTime(date, in: .gmt)?.description ?? "?") + "Z"
    }
}
