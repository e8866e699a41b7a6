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
        guard let time = CivilDateTime(basicFormat: text) else { throw SpecError.bad("bad time \(text)") }
        return time
    }

    static func local(_ text: String, _ zone: TimeZone) throws -> Date {
        try civil(text).date(in: zone)
    }
}
