import Foundation
import OrbitCoveModels

/// How calendar notifications name an event's time and link to it.
enum EventWording {
    /// "Tue 11 Mar, 18:00 at Gym", in the event's own zone; all-day events by their date.
    static func when(_ event: EventSummary) -> String {
        when(event.startsAt, allDay: event.allDay, timeZone: event.timeZone, place: event.locationName)
    }

    static func when(_ startsAt: Date, allDay: Bool, timeZone: String, place: String? = nil) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.timeZone = TimeZone(identifier: timeZone) ?? .gmt
        formatter.dateFormat = allDay ? "EEE d MMM" : "EEE d MMM, HH:mm"
        let time = formatter.string(from: startsAt)
        guard let place, !place.isEmpty else { return time }
        return "\(time) at \(place)"
    }

    static func link(_ event: EventSummary, in communityId: UUID) -> DeepLink {
        DeepLink(communityId: communityId, eventId: event.eventId, recurrenceId: event.recurrenceId)
    }

    /// One per event or instance: a later change replaces the earlier push on the lock screen.
    static func collapseId(_ event: EventSummary) -> String {
        guard let instance = event.recurrenceId else { return "event-\(event.eventId.lowercasedString)" }
        return "event-\(event.eventId.lowercasedString)-\(Int(instance.timeIntervalSince1970))"
    }
}
