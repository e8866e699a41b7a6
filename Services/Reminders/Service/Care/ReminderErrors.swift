import Foundation
import OrbitCoveInfra
import OrbitCoveModels

enum ReminderErrors {
    static let reminderNotFound = APIError.notFound("REMINDER_NOT_FOUND", "No such reminder")
    static let occurrenceNotFound = APIError.notFound(
        "OCCURRENCE_NOT_FOUND", "The reminder has no occurrence on that date (occurrences are made 60 days ahead)")

    /// Someone marked it first: who, and when.
    static func alreadyMarked(_ occurrence: CareOccurrence) -> APIError {
        var details: [String: JSONValue] = ["status": .string(occurrence.status.rawValue)]
        if let by = occurrence.completedBy { details["completedBy"] = .string(by.lowercasedString) }
        if let at = occurrence.completedAt { details["completedAt"] = .string(JSONCoding.formatTimestamp(at)) }
        return APIError(
            .conflict, code: "OCCURRENCE_ALREADY_MARKED",
            message: "This occurrence was already marked \(occurrence.status.rawValue)", details: details)
    }

    /// `422`: a rule the reminders do not support, named on its field as events name it.
    static func unsupported(_ field: String, _ message: String) -> APIError {
        APIError(
            .unprocessableContent, code: "UNSUPPORTED_RECURRENCE", message: message,
            details: ["fields": .object([field: .string(message)])])
    }
}
