import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// A window written straight to JSON: through `Encodable` its thousands of events were most of
/// the request's time. The bytes are the encoder's for ``CalendarWindow/events``
/// (`CalendarWindowJSONTests` compares them), so clients cannot tell.
///
/// The fields an instance shares with its source are written once per source when several
/// instances share it (a series' instances) and copied into each; an instance's own fields,
/// answers and counts are written for each.
extension CalendarWindow {
    package func json() throws -> RawJSON {
        var uses = [Int](repeating: 0, count: sources.count)
        for instance in instances { uses[instance.source] += 1 }
        let written: [[[UInt8]]?] = try sources.indices.map { index in
            guard uses[index] > 1 else { return nil }
            let source = sources[index]
            return try CalendarEvent.SharedRun.allCases.map { run in
                try JSONWriter.members { try source.write(run, to: &$0) }
            }
        }
        var json = JSONWriter(capacity: instances.count * 1_024)
        try json.array(count: instances.count) { json, index in
            let instance = instances[index]
            try write(instance, shared: written[instance.source], to: &json)
        }
        return json.raw
    }

    /// The fields in key order, as `JSONCoding.encoder` (sorted keys) writes them: the shared
    /// ones in the runs that fall between the instance's own, copied from `shared` if given.
    private func write(_ instance: Instance, shared: [[UInt8]]?, to json: inout JSONWriter) throws {
        // The source is read in place: a copy of an event is a dozen reference counts.
        func run(_ run: CalendarEvent.SharedRun, _ json: inout JSONWriter) throws {
            if let shared {
                json.members(shared[run.rawValue])
            } else {
                try sources[instance.source].write(run, to: &json)
            }
        }
        let mine = instance.answers?.mine ?? []
        try json.object { json in
            try run(.allDayToAttachments, &json)
            json.key("attendance")
            instance.attendance(capacity: sources[instance.source].capacity).write(to: &json)
            json.field("cancelled", instance.cancelled)
            try run(.capacityToCreatedBy, &json)
            json.key("dependantRsvps")
            json.array(count: mine.count) { json, index in
                if mine[index].familyMemberId != nil { mine[index].write(to: &json) }
            }
            try run(.description, &json)
            json.field("endDate", instance.endDate)
            json.field("endsAt", instance.endsAt)
            try run(.exceptionDatesToLocationName, &json)
            json.field("recurrenceId", instance.recurrenceId)
            try run(.recurrenceParentIdToRule, &json)
            json.key("rsvp")
            if let rsvp = mine.first(where: { $0.familyMemberId == nil }) { rsvp.write(to: &json) } else { json.null() }
            json.field("rsvpDeadline", instance.rsvpDeadline)
            try run(.sequence, &json)
            json.field("startDate", instance.startDate)
            json.field("startsAt", instance.startsAt)
            try run(.timeZoneToUpdatedAt, &json)
        }
    }
}

extension CalendarEvent {
    /// The runs of fields an instance shares with its source, between its own in key order.
    enum SharedRun: Int, CaseIterable {
        case allDayToAttachments
        case capacityToCreatedBy
        case description
        case exceptionDatesToLocationName
        case recurrenceParentIdToRule
        case sequence
        case timeZoneToUpdatedAt
    }

    func write(_ run: SharedRun, to json: inout JSONWriter) throws {
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
