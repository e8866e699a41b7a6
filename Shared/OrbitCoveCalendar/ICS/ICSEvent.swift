import Foundation

/// One VEVENT: a single event, the master of a series, or an override of one instance (`recurrenceID` set).
///
/// Times are instants; `timeZone` says which wall clock to write them on (`DTSTART;TZID=...`). For an all-day
/// event `start` and `end` are midnights in `timeZone` (the convention `RecurrenceExpansion` uses), `end` being
/// the midnight after the last day, and they are written as DATE values.
package struct ICSEvent: Sendable {
    package enum Status: String, Sendable {
        case confirmed = "CONFIRMED"
        case tentative = "TENTATIVE"
        case cancelled = "CANCELLED"
    }

    package struct Geo: Hashable, Sendable {
        package var latitude: Double
        package var longitude: Double

        package init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    package var uid: String
    package var start: Date
    package var end: Date
    package var timeZone: TimeZone
    package var isAllDay: Bool
    package var summary: String
    /// DESCRIPTION.
    package var details: String?
    package var location: String?
    package var geo: Geo?
    package var categories: [String] = []
    package var recurrenceRule: RecurrenceRule?
    /// Original starts of removed instances (EXDATE), as `RecurrenceExpansion` produced them.
    package var exceptionDates: [Date] = []
    /// For an override: the original start of the instance it replaces (RECURRENCE-ID).
    package var recurrenceID: Date?
    package var sequence = 0
    package var status = Status.confirmed
    package var created: Date?
    package var lastModified: Date?
    /// DTSTAMP: when this representation was produced.
    package var stamp: Date

    package init(
        uid: String, start: Date, end: Date, timeZone: TimeZone, isAllDay: Bool = false, summary: String,
        stamp: Date
    ) {
        self.uid = uid
        self.start = start
        self.end = end
        self.timeZone = timeZone
        self.isAllDay = isAllDay
        self.summary = summary
        self.stamp = stamp
    }
}
