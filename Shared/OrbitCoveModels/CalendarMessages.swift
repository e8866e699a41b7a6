import Foundation

/// What a calendar message says about one event or instance: enough for the notifications
/// and reminders services to word a message and link to it without reading the event.
package struct EventSummary: Codable, Sendable, Equatable {
    package var eventId: UUID
    /// The instance's original start, for one instance of a series.
    package var recurrenceId: Date?
    package var title: String
    package var startsAt: Date
    package var endsAt: Date?
    package var allDay: Bool
    package var timeZone: String
    package var locationName: String?
    /// The series' rule, when the message is about a whole series (or the part that follows).
    package var recurrenceRule: String?
    package var createdBy: UUID

    package init(
        eventId: UUID, recurrenceId: Date?, title: String, startsAt: Date, endsAt: Date?, allDay: Bool,
        timeZone: String, locationName: String?, recurrenceRule: String?, createdBy: UUID
    ) {
        self.eventId = eventId
        self.recurrenceId = recurrenceId
        self.title = title
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.allDay = allDay
        self.timeZone = timeZone
        self.locationName = locationName
        self.recurrenceRule = recurrenceRule
        self.createdBy = createdBy
    }
}

/// A new event or series; `rsvpRequested` when it asks for answers (a deadline or a capacity).
package struct EventCreated: MessagePayload, Equatable {
    package static let messageType = "event.created"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var event: EventSummary
    package var rsvpRequested: Bool

    package init(communityId: UUID, communityName: String, event: EventSummary, rsvpRequested: Bool) {
        self.communityId = communityId
        self.communityName = communityName
        self.event = event
        self.rsvpRequested = rsvpRequested
    }
}

/// An event, a series, part of one or one instance changed or was cancelled.
package struct EventUpdated: MessagePayload, Equatable {
    package static let messageType = "event.updated"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    /// The event as it is now (for a cancellation, as it was).
    package var event: EventSummary
    package var scope: EditScope?
    /// What changed: any of `time`, `place`, `title`, `details`, `capacity`, `rsvp`, `recurrence`,
    /// `cancelled`, `deleted`.
    package var changes: [String]
    package var updatedBy: UUID
    /// Members whose own answer (or a dependant's) to a changed instance was yes or maybe.
    package var answeredUserIds: [UUID]

    package init(
        communityId: UUID, communityName: String, event: EventSummary, scope: EditScope?, changes: [String],
        updatedBy: UUID, answeredUserIds: [UUID]
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.event = event
        self.scope = scope
        self.changes = changes
        self.updatedBy = updatedBy
        self.answeredUserIds = answeredUserIds
    }
}

/// Someone answered (or changed their answer) for themself or a dependant. No longer sent
/// (migration 0065: nobody consumed it); decoded for what the release before still sends while
/// it rolls out.
package struct EventRSVPChanged: MessagePayload, Equatable {
    package static let messageType = "event.rsvp_changed"
    package static let messageVersion = 1

    package var communityId: UUID
    package var event: EventSummary
    package var userId: UUID
    package var familyMemberId: UUID?
    package var status: RSVPStatus
    package var previousStatus: RSVPStatus?
    package var waitlisted: Bool

    package init(
        communityId: UUID, event: EventSummary, userId: UUID, familyMemberId: UUID?, status: RSVPStatus,
        previousStatus: RSVPStatus?, waitlisted: Bool
    ) {
        self.communityId = communityId
        self.event = event
        self.userId = userId
        self.familyMemberId = familyMemberId
        self.status = status
        self.previousStatus = previousStatus
        self.waitlisted = waitlisted
    }
}

/// A place opened up and a waiting yes got it.
package struct EventWaitlistPromoted: MessagePayload, Equatable {
    package static let messageType = "event.waitlist_promoted"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var event: EventSummary
    package var userId: UUID
    package var familyMemberId: UUID?

    package init(communityId: UUID, communityName: String, event: EventSummary, userId: UUID, familyMemberId: UUID?) {
        self.communityId = communityId
        self.communityName = communityName
        self.event = event
        self.userId = userId
        self.familyMemberId = familyMemberId
    }
}

/// A lower capacity took a confirmed yes's place: it waits again, ahead of those who were
/// already waiting (places go in answer order).
package struct EventMovedToWaitlist: MessagePayload, Equatable {
    package static let messageType = "event.moved_to_waitlist"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var event: EventSummary
    package var userId: UUID
    package var familyMemberId: UUID?
    /// The new capacity, in seats.
    package var capacity: Int
    package var changedBy: UUID

    package init(
        communityId: UUID, communityName: String, event: EventSummary, userId: UUID, familyMemberId: UUID?,
        capacity: Int, changedBy: UUID
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.event = event
        self.userId = userId
        self.familyMemberId = familyMemberId
        self.capacity = capacity
        self.changedBy = changedBy
    }
}
