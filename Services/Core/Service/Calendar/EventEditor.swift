import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Writing the calendar: creating events and series, and changing or deleting a single event,
/// one instance (`this`), a series from an instance on (`following`, which splits the series
/// there) or a whole series (`all`), each on the community write path with its message.
///
/// - `this` writes an override: a copy of the instance keyed by the series and the instance's
///   original start, remembering which of its fields were edited on it.
/// - `all` changes the series and carries each change to the overrides that did not edit that
///   field themselves; a new start moves every instance, exception, override and answer by the
///   same wall-clock amount.
/// - Deleting an event someone said they would come to cancels it instead (they still see it,
///   cancelled); deleting one instance adds an exception date.
///
/// What a request names is found and locked by ``resolve(_:recurrenceId:scope:action:granted:on:)``
/// (`EditTarget.swift`); the edit itself is an ``EventEdit``.
struct EventEditor: Sendable {
    let writes: CommunityWrites
    let events: EventRows
    let logger: Logger

    func create(
        _ input: EventInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> CalendarEvent
    {
        let now = Date()
        let blank = EventRecord(
            id: .random(), communityId: granted.communityId, createdBy: granted.userId, title: "", description: nil,
            startsAt: now, endsAt: nil, allDay: false, timeZone: Self.zoneName(granted.record.settings.timezone),
            locationName: nil, locationLat: nil, locationLng: nil, locationAddress: nil, category: .other,
            attachments: [], rsvpDeadline: nil, capacity: nil, recurrenceRule: nil, exceptionDates: [], parentId: nil,
            recurrenceId: nil, overriddenFields: [], cancelled: false, sequence: 0, createdAt: now, updatedAt: now)
        let event = try input.applied(to: blank)
        return try await writes.change(in: granted.communityId, by: granted.userId, request: request) {
            change, connection in
            let inserted = try await events.insert(event, on: connection, logger: logger)
            change.touched(inserted.count)
            guard let stored = inserted.first else { throw APIError.forbidden }
            let created = EventCreated(
                communityId: granted.communityId, communityName: granted.record.name, event: stored.summary(),
                rsvpRequested: stored.rsvpDeadline != nil || stored.capacity != nil)
            change.announce(created)
            change.announce(created, to: .reminders)
            return stored.event
        }
    }

    func edit(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, input: EventInput, granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> CalendarEvent {
        try await writes.change(in: granted.communityId, by: granted.userId, request: request) { change, connection in
            let target = try await resolve(
                id, recurrenceId: recurrenceId, scope: scope, action: .editEvent, granted: granted, on: connection)
            if target.event.cancelled { throw CalendarErrors.cancelled }
            var edit = EventEdit(
                change: change, connection: connection, granted: granted, events: events, logger: logger)
            defer { change = edit.change }
            switch target {
            case .instance(let series, let start):
                return try await edit.instance(series, at: start, with: input)
            case .following(let series, let start) where start != series.startsAt:
                let tail = try await edit.split(series, at: start)
                return try await edit.whole(tail, with: input, scope: .following)
            case .following(let event, _), .whole(let event):
                return try await edit.whole(event, with: input, scope: event.isSeries ? .all : nil)
            }
        }
    }

    func delete(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws {
        try await writes.change(in: granted.communityId, by: granted.userId, request: request) { change, connection in
            let target = try await resolve(
                id, recurrenceId: recurrenceId, scope: scope, action: .deleteEvent, granted: granted, on: connection)
            var edit = EventEdit(
                change: change, connection: connection, granted: granted, events: events, logger: logger)
            defer { change = edit.change }
            switch target {
            case .instance(let series, let start):
                try await edit.removeInstance(of: series, at: start)
            case .following(let series, let start) where start != series.startsAt:
                let tail = try await edit.split(series, at: start)
                try await edit.remove(tail, scope: .following)
            case .following(let event, _), .whole(let event):
                try await edit.remove(event, scope: event.isSeries ? .all : nil)
            }
        }
    }

    static func zoneName(_ name: String) -> String {
        TimeZone(identifier: name) == nil ? "UTC" : name
    }
}
