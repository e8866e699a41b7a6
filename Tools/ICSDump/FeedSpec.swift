import Foundation
import OrbitCoveCalendar

/// A feed description from Compare/ics_compare.py. Local times are `YYYYMMDDTHHMMSS` in the series' zone.
struct FeedSpec: Decodable {
    struct Series: Decodable {
        var uid: String
        var summary: String
        var description: String?
        var location: String?
        var geo: [Double]?
        var categories: [String]?
        var tz: String
        var allDay: Bool?
        var start: String
        /// Minutes, or days for an all-day series.
        var length: Int
        var rule: String?
        var exdates: [String]?
        var overrides: [Override]?
    }

    struct Override: Decodable {
        var original: String
        var start: String?
        var length: Int?
        var cancelled: Bool?
        var summary: String?
    }

    var calendarName: String
    var stamp: String
    var windowFrom: String
    var windowTo: String
    var series: [Series]
}

struct FeedResult: Encodable {
    struct Instance: Encodable, Comparable {
        var uid: String
        /// `...Z` for timed instances, `YYYYMMDD` for all-day ones.
        var start: String
        var summary: String

        static func < (lhs: Instance, rhs: Instance) -> Bool {
            (lhs.uid, lhs.start) < (rhs.uid, rhs.start)
        }
    }

    var ics: String
    var instances: [Instance]
}

enum SpecError: Error {
    case bad(String)
}

enum SpecTime {
    static func civil(_ text: String) throws -> CivilDateTime {
        let digits = Array(text.utf8).filter { $0 >= 0x30 && $0 <= 0x39 }.map { Int($0 - 0x30) }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        guard digits.count == 14,
            let time = CivilDateTime(
                year: number(0..<4), month: number(4..<6), day: number(6..<8), hour: number(8..<10),
                minute: number(10..<12), second: number(12..<14))
        else { throw SpecError.bad("bad time \(text)") }
        return time
    }

    static func local(_ text: String, _ zone: TimeZone) throws -> Date {
        try civil(text).date(in: zone)
    }
}
