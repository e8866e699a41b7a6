import Foundation
import OrbitCoveCalendar
import OrbitCoveModels

extension CalendarEvent {
    /// An all-day event's dates in its zone, from its start and end.
    mutating func setDates(in zone: TimeZone) {
        startDate = Self.date(of: startsAt, in: zone)
        endDate = endsAt.map { Self.date(of: $0, in: zone) }
    }

    /// The day `instant` falls on in `zone`, as `YYYY-MM-DD`.
    static func date(of instant: Date, in zone: TimeZone) -> String {
        CivilDateTime.clamped(instant, in: zone).date.isoText
    }
}
