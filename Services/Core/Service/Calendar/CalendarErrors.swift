import Foundation
import OrbitCoveInfra

/// The calendar's errors, one code each.
enum CalendarErrors {
    static let eventNotFound = APIError.notFound("EVENT_NOT_FOUND", "No such event in this community")
    static let instanceNotFound = APIError.notFound(
        "INSTANCE_NOT_FOUND", "The series has no instance starting at that recurrenceId")
    static let cancelled = APIError(.conflict, code: "EVENT_CANCELLED", message: "The event was cancelled")
    /// An answer the event's edits kept overtaking (``RSVPStore/attempts`` in a row).
    static let keptChanging = APIError(
        .conflict, code: "EVENT_CHANGING", message: "The event kept changing while you answered; try again",
        headers: [.retryAfter: "1"])
    static let rsvpClosed = APIError(
        .conflict, code: "RSVP_CLOSED", message: "Answers for this event closed at its RSVP deadline")

    static func partyTooLarge(_ capacity: Int) -> APIError {
        APIError(
            .conflict, code: "PARTY_TOO_LARGE",
            message: "This event has \(capacity) places in all: ask for fewer plus-ones",
            details: ["capacity": .number(Double(capacity))])
    }

    static func windowTooBusy(_ limit: Int) -> APIError {
        APIError(
            .unprocessableContent, code: "WINDOW_TOO_BUSY",
            message: "The window holds more than \(limit) instances; ask for a shorter one")
    }
}
