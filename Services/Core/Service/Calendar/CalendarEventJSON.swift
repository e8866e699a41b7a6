import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// Calendar events written straight to JSON: a window read is thousands of them, and through
/// `Encodable` their encoding was most of the request's time. The bytes are the encoder's
/// (`CalendarEventJSONTests` compares them), so clients cannot tell.
///
/// The instances of one series share most of their fields, so from an id's second instance on
/// those are written once and copied into each instance: an event whose shared fields equal
/// those already seen for its id reuses them (compared, never assumed, so an override with the
/// series' id but its own title gets its own). A single event is written as it is.
extension CalendarEvent {
    package static func json(_ events: [CalendarEvent]) throws -> RawJSON {
        var json = JSONWriter(capacity: events.count * 1_024)
        var seen: [UUID: SharedFields] = [:]
        var written: [UUID: SharedMembers] = [:]
        try json.array(events) { json, event in
            let fields = SharedFields(event)
            if let members = written[event.id], members.fields == fields {
                try event.write(to: &json, fields: fields, members: members)
            } else if seen[event.id] == fields {
                let members = try SharedMembers(fields)
                written[event.id] = members
                try event.write(to: &json, fields: fields, members: members)
            } else {
                seen[event.id] = fields
                try event.write(to: &json, fields: fields, members: nil)
            }
        }
        return json.raw
    }

    /// The fields in key order, as `JSONCoding.encoder` (sorted keys) writes them: the shared
    /// ones in the runs that fall between the instance's own, copied from `members` if given.
    private func write(to json: inout JSONWriter, fields: SharedFields, members: SharedMembers?) throws {
        func shared(_ run: SharedFields.Run, _ json: inout JSONWriter) throws {
            if let members { json.members(members.runs[run.rawValue]) } else { try fields.write(run, to: &json) }
        }
        try json.object { json in
            try shared(.allDayToAttachments, &json)
            json.key("attendance")
            if let attendance { attendance.write(to: &json) } else { json.null() }
            json.field("cancelled", cancelled)
            try shared(.capacityToCreatedBy, &json)
            json.key("dependantRsvps")
            json.array(dependantRsvps) { json, rsvp in rsvp.write(to: &json) }
            try shared(.description, &json)
            json.field("endDate", endDate)
            json.field("endsAt", endsAt)
            try shared(.exceptionDatesToLocationName, &json)
            json.field("recurrenceId", recurrenceId)
            try shared(.recurrenceParentIdToRule, &json)
            json.key("rsvp")
            if let rsvp { rsvp.write(to: &json) } else { json.null() }
            json.field("rsvpDeadline", rsvpDeadline)
            try shared(.sequence, &json)
            json.field("startDate", startDate)
            json.field("startsAt", startsAt)
            try shared(.timeZoneToUpdatedAt, &json)
        }
    }
}

/// What every instance of one stored event has in common: all but its times, its deadline,
/// whether it is cancelled, its answers and its counts.
private struct SharedFields: Equatable {
    var allDay: Bool
    var attachments: [JSONValue]
    var capacity: Int?
    var category: EventCategory
    var communityId: UUID
    var createdAt: Date
    var createdBy: UUID
    var description: String?
    var exceptionDates: [Date]
    var id: UUID
    var locationAddress: String?
    var locationLat: Double?
    var locationLng: Double?
    var locationName: String?
    var recurrenceParentId: UUID?
    var recurrenceRule: String?
    var sequence: Int
    var timeZone: String
    var title: String
    var updatedAt: Date

    init(_ event: CalendarEvent) {
        allDay = event.allDay
        attachments = event.attachments
        capacity = event.capacity
        category = event.category
        communityId = event.communityId
        createdAt = event.createdAt
        createdBy = event.createdBy
        description = event.description
        exceptionDates = event.exceptionDates
        id = event.id
        locationAddress = event.locationAddress
        locationLat = event.locationLat
        locationLng = event.locationLng
        locationName = event.locationName
        recurrenceParentId = event.recurrenceParentId
        recurrenceRule = event.recurrenceRule
        sequence = event.sequence
        timeZone = event.timeZone
        title = event.title
        updatedAt = event.updatedAt
    }

    /// The runs of shared fields between an instance's own fields, in key order.
    enum Run: Int, CaseIterable {
        case allDayToAttachments
        case capacityToCreatedBy
        case description
        case exceptionDatesToLocationName
        case recurrenceParentIdToRule
        case sequence
        case timeZoneToUpdatedAt
    }

    func write(_ run: Run, to json: inout JSONWriter) throws {
        switch run {
        case .allDayToAttachments:
            json.field("allDay", allDay)
            try json.field("attachments", encoding: attachments)
        case .capacityToCreatedBy:
            json.field("capacity", capacity)
            json.field("category", category.rawValue)
            json.field("communityId", communityId)
            json.field("createdAt", createdAt)
            json.field("createdBy", createdBy)
        case .description:
            json.field("description", description)
        case .exceptionDatesToLocationName:
            json.key("exceptionDates")
            json.array(exceptionDates) { json, date in json.value(date: date) }
            json.field("id", id)
            json.field("locationAddress", locationAddress)
            json.field("locationLat", locationLat)
            json.field("locationLng", locationLng)
            json.field("locationName", locationName)
        case .recurrenceParentIdToRule:
            json.field("recurrenceParentId", recurrenceParentId)
            json.field("recurrenceRule", recurrenceRule)
        case .sequence:
            json.field("sequence", sequence)
        case .timeZoneToUpdatedAt:
            json.field("timeZone", timeZone)
            json.field("title", title)
            json.field("updatedAt", updatedAt)
        }
    }
}

/// The shared fields written once, run by run, to be copied into each instance.
private struct SharedMembers {
    let fields: SharedFields
    let runs: [[UInt8]]

    init(_ fields: SharedFields) throws {
        self.fields = fields
        runs = try SharedFields.Run.allCases.map { run in try JSONWriter.members { try fields.write(run, to: &$0) } }
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
