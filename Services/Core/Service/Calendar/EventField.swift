import Foundation
import OrbitCoveModels

/// What an edit can change, in the groups an override remembers and messages report.
enum EventField: String, Sendable, CaseIterable {
    case title
    case details
    case time
    case place
    case category
    case attachments
    case rsvp
    case capacity
}

extension EventRecord {
    /// Which field groups differ between two versions of an event.
    func changedFields(from old: EventRecord) -> Set<EventField> {
        var changed: Set<EventField> = []
        if title != old.title { changed.insert(.title) }
        if description != old.description { changed.insert(.details) }
        if startsAt != old.startsAt || endsAt != old.endsAt || allDay != old.allDay { changed.insert(.time) }
        if locationName != old.locationName || locationLat != old.locationLat || locationLng != old.locationLng
            || locationAddress != old.locationAddress
        {
            changed.insert(.place)
        }
        if category != old.category { changed.insert(.category) }
        if attachments != old.attachments { changed.insert(.attachments) }
        if rsvpDeadline != old.rsvpDeadline { changed.insert(.rsvp) }
        if capacity != old.capacity { changed.insert(.capacity) }
        return changed
    }

    /// Copies the given field groups from `source` (the time only when `source` is not a
    /// series, whose own time is its first instance's).
    mutating func copy(_ fields: Set<EventField>, from source: EventRecord) {
        for field in fields {
            switch field {
            case .title: title = source.title
            case .details: description = source.description
            case .time:
                startsAt = source.startsAt
                endsAt = source.endsAt
                allDay = source.allDay
            case .place:
                locationName = source.locationName
                locationLat = source.locationLat
                locationLng = source.locationLng
                locationAddress = source.locationAddress
            case .category: category = source.category
            case .attachments: attachments = source.attachments
            case .rsvp: rsvpDeadline = source.rsvpDeadline
            case .capacity: capacity = source.capacity
            }
        }
    }
}
