import Foundation

package enum EventCategory: String, Codable, Sendable, CaseIterable {
    case practice
    case game
    case meeting
    case social
    case other
}

package enum RSVPStatus: String, Codable, Sendable, CaseIterable {
    case yes
    case no
    case maybe
}

/// Which instances of a recurring series a change or deletion applies to.
package enum EditScope: String, Codable, Sendable, CaseIterable {
    /// Only the instance named by `recurrenceId`.
    case this
    /// That instance and every later one: the series is split there.
    case following
    /// The whole series.
    case all
}

/// An event as a client sees it: a single event, a series (with its rule), an override of one
/// instance (sync), or one instance of a series in a window read.
///
/// In a window read an instance of a series carries the series' `id` and its `recurrenceId`
/// (the instance's original start): together they name the instance in every other request.
package struct CalendarEvent: Codable, Sendable, Equatable {
    package var id: UUID
    package var communityId: UUID
    package var createdBy: UUID
    package var title: String
    @ExplicitNull package var description: String?
    package var startsAt: Date
    @ExplicitNull package var endsAt: Date?
    package var allDay: Bool
    /// For an all-day event, its first day and the day after its last (`YYYY-MM-DD`), which do
    /// not shift between time zones.
    @ExplicitNull package var startDate: String?
    @ExplicitNull package var endDate: String?
    /// The IANA zone the event's wall-clock times (and its series) live in: the community's.
    package var timeZone: String
    @ExplicitNull package var locationName: String?
    @ExplicitNull package var locationLat: Double?
    @ExplicitNull package var locationLng: Double?
    @ExplicitNull package var locationAddress: String?
    package var category: EventCategory
    package var attachments: [JSONValue]
    @ExplicitNull package var rsvpDeadline: Date?
    @ExplicitNull package var capacity: Int?
    /// RFC 5545 RRULE value (no `RRULE:` prefix) of a series.
    @ExplicitNull package var recurrenceRule: String?
    package var exceptionDates: [Date]
    /// For an override (in sync): the series it belongs to.
    @ExplicitNull package var recurrenceParentId: UUID?
    /// The instance's original start in UTC; `null` for a single event or a whole series.
    @ExplicitNull package var recurrenceId: Date?
    package var cancelled: Bool
    package var sequence: Int
    package var createdAt: Date
    package var updatedAt: Date
    /// The caller's own answer and their dependants' (window reads and instance reads).
    @ExplicitNull package var rsvp: EventRSVP?
    package var dependantRsvps: [EventRSVP]
    @ExplicitNull package var attendance: AttendanceCounts?

    package init(
        id: UUID, communityId: UUID, createdBy: UUID, title: String, description: String?, startsAt: Date,
        endsAt: Date?, allDay: Bool, startDate: String?, endDate: String?, timeZone: String, locationName: String?,
        locationLat: Double?, locationLng: Double?, locationAddress: String?, category: EventCategory,
        attachments: [JSONValue], rsvpDeadline: Date?, capacity: Int?, recurrenceRule: String?,
        exceptionDates: [Date], recurrenceParentId: UUID?, recurrenceId: Date?, cancelled: Bool, sequence: Int,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.createdBy = createdBy
        self.title = title
        self.description = description
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.allDay = allDay
        self.startDate = startDate
        self.endDate = endDate
        self.timeZone = timeZone
        self.locationName = locationName
        self.locationLat = locationLat
        self.locationLng = locationLng
        self.locationAddress = locationAddress
        self.category = category
        self.attachments = attachments
        self.rsvpDeadline = rsvpDeadline
        self.capacity = capacity
        self.recurrenceRule = recurrenceRule
        self.exceptionDates = exceptionDates
        self.recurrenceParentId = recurrenceParentId
        self.recurrenceId = recurrenceId
        self.cancelled = cancelled
        self.sequence = sequence
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.rsvp = nil
        self.dependantRsvps = []
        self.attendance = nil
    }
}

/// One person's answer for one event instance: the caller's own, or one of their dependants'.
package struct EventRSVP: Codable, Sendable, Equatable {
    @ExplicitNull package var familyMemberId: UUID?
    package var status: RSVPStatus
    package var plusOnes: Int
    @ExplicitNull package var note: String?
    /// A yes past the event's capacity: in line for a place, in answer order.
    package var waitlisted: Bool
    package var respondedAt: Date

    package init(
        familyMemberId: UUID?, status: RSVPStatus, plusOnes: Int, note: String?, waitlisted: Bool, respondedAt: Date
    ) {
        self.familyMemberId = familyMemberId
        self.status = status
        self.plusOnes = plusOnes
        self.note = note
        self.waitlisted = waitlisted
        self.respondedAt = respondedAt
    }
}

/// How an instance stands: people per answer (a member and each dependant count once),
/// seats taken by confirmed yeses (with their plus-ones) and the waitlist.
package struct AttendanceCounts: Codable, Sendable, Equatable {
    package var going: Int
    package var seats: Int
    package var maybe: Int
    package var declined: Int
    package var waitlisted: Int
    @ExplicitNull package var capacity: Int?

    package init(going: Int, seats: Int, maybe: Int, declined: Int, waitlisted: Int, capacity: Int?) {
        self.going = going
        self.seats = seats
        self.maybe = maybe
        self.declined = declined
        self.waitlisted = waitlisted
        self.capacity = capacity
    }
}

/// `GET …/events/{eventId}/attendance`: the counts and everyone's answer, confirmed yeses and
/// then the waitlist in answer order, then maybes and noes.
package struct EventAttendance: Codable, Sendable, Equatable {
    package var eventId: UUID
    @ExplicitNull package var recurrenceId: Date?
    package var counts: AttendanceCounts
    package var responses: [AttendanceEntry]

    package init(eventId: UUID, recurrenceId: Date?, counts: AttendanceCounts, responses: [AttendanceEntry]) {
        self.eventId = eventId
        self.recurrenceId = recurrenceId
        self.counts = counts
        self.responses = responses
    }
}

package struct AttendanceEntry: Codable, Sendable, Equatable {
    package var userId: UUID
    package var displayName: String
    @ExplicitNull package var familyMemberId: UUID?
    @ExplicitNull package var familyMemberName: String?
    package var status: RSVPStatus
    package var plusOnes: Int
    @ExplicitNull package var note: String?
    package var waitlisted: Bool
    package var respondedAt: Date

    package init(
        userId: UUID, displayName: String, familyMemberId: UUID?, familyMemberName: String?, status: RSVPStatus,
        plusOnes: Int, note: String?, waitlisted: Bool, respondedAt: Date
    ) {
        self.userId = userId
        self.displayName = displayName
        self.familyMemberId = familyMemberId
        self.familyMemberName = familyMemberName
        self.status = status
        self.plusOnes = plusOnes
        self.note = note
        self.waitlisted = waitlisted
        self.respondedAt = respondedAt
    }
}

/// A secret calendar-feed address: one community's events, or (without a community) all of
/// the user's. The `url` is shown once, when the feed is made; only its hash is kept.
package struct CalendarFeed: Codable, Sendable, Equatable {
    package var id: UUID
    @ExplicitNull package var communityId: UUID?
    @ExplicitNull package var url: String?
    package var createdAt: Date
    @ExplicitNull package var lastUsedAt: Date?

    package init(id: UUID, communityId: UUID?, url: String?, createdAt: Date, lastUsedAt: Date?) {
        self.id = id
        self.communityId = communityId
        self.url = url
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}
