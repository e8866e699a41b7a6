import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// Calendar events written straight to JSON: a window read is thousands of them, and through
/// `Encodable` their encoding was most of the request's time. The bytes are the encoder's
/// (`CalendarEventJSONTests` compares them), so clients cannot tell.
extension CalendarEvent {
    package static func json(_ events: [CalendarEvent]) throws -> RawJSON {
        var json = JSONWriter(capacity: events.count * 1_024)
        try json.array(events) { json, event in try event.write(to: &json) }
        return json.raw
    }

    /// The fields in key order, as `JSONCoding.encoder` (sorted keys) writes them.
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            json.field("allDay", allDay)
            try json.field("attachments", encoding: attachments)
            json.key("attendance")
            if let attendance { attendance.write(to: &json) } else { json.null() }
            json.field("cancelled", cancelled)
            json.field("capacity", capacity)
            json.field("category", category.rawValue)
            json.field("communityId", communityId)
            json.field("createdAt", createdAt)
            json.field("createdBy", createdBy)
            json.key("dependantRsvps")
            json.array(dependantRsvps) { json, rsvp in rsvp.write(to: &json) }
            json.field("description", description)
            json.field("endDate", endDate)
            json.field("endsAt", endsAt)
            json.key("exceptionDates")
            json.array(exceptionDates) { json, date in json.value(date: date) }
            json.field("id", id)
            json.field("locationAddress", locationAddress)
            json.field("locationLat", locationLat)
            json.field("locationLng", locationLng)
            json.field("locationName", locationName)
            json.field("recurrenceId", recurrenceId)
            json.field("recurrenceParentId", recurrenceParentId)
            json.field("recurrenceRule", recurrenceRule)
            json.key("rsvp")
            if let rsvp { rsvp.write(to: &json) } else { json.null() }
            json.field("rsvpDeadline", rsvpDeadline)
            json.field("sequence", sequence)
            json.field("startDate", startDate)
            json.field("startsAt", startsAt)
            json.field("timeZone", timeZone)
            json.field("title", title)
            json.field("updatedAt", updatedAt)
        }
    }
}

extension EventRSVP {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("familyMemberId", familyMemberId)
            json.field("note", note)
            json.field("plusOnes", plusOnes)
            json.field("respondedAt", respondedAt)
            json.field("status", status.rawValue)
            json.field("waitlisted", waitlisted)
        }
    }
}

extension AttendanceCounts {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("capacity", capacity)
            json.field("declined", declined)
            json.field("going", going)
            json.field("maybe", maybe)
            json.field("seats", seats)
            json.field("waitlisted", waitlisted)
        }
    }
}
