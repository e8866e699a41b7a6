import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// A window written straight to JSON: through `Encodable` its thousands of events were most of
/// the request's time. The bytes are the encoder's for ``CalendarWindow/events``
/// (`CalendarWindowJSONTests` compares them), so clients cannot tell.
///
/// The fields an instance shares with its source (all of a series' instances share one) are
/// written once per source, into one buffer, and copied into each instance from there; an
/// instance's own fields, answers and counts are written for each.
extension CalendarWindow {
    package func json() throws -> RawJSON {
        let runCount = CalendarEvent.SharedRun.allCases.count
        // Source `s`'s run `r` is `shared.bytes[runs[s * runCount + r]]` (runs in the order of
        // `SharedRun.allCases`, which are its raw values).
        var shared = JSONWriter(capacity: sources.count * 512)
        var runs: [Range<Int>] = []
        runs.reserveCapacity(sources.count * runCount)
        for source in sources {
            for run in CalendarEvent.SharedRun.allCases {
                let start = shared.bytes.count
                try shared.detached { try source.write(run, to: &$0) }
                runs.append(start..<shared.bytes.count)
            }
        }
        let capacities = sources.map(\.capacity)
        var json = JSONWriter(capacity: instances.count * 1_024)
        shared.bytes.withUnsafeBufferPointer { written in
            json.array(count: instances.count) { json, index in
                let instance = instances[index]
                let first = instance.source * runCount
                write(instance, capacity: capacities[instance.source], to: &json) { run, json in
                    json.members(UnsafeBufferPointer(rebasing: written[runs[first + run.rawValue]]))
                }
            }
        }
        return json.raw
    }

    /// The fields in key order, as `JSONCoding.encoder` (sorted keys) writes them: the shared
    /// ones, written by `run`, in the runs that fall between the instance's own.
    private func write(
        _ instance: Instance, capacity: Int?, to json: inout JSONWriter,
        run: (CalendarEvent.SharedRun, inout JSONWriter) -> Void
    ) {
        let mine = instance.answers?.mine ?? []
        json.object { json in
            run(.allDayToAttachments, &json)
            json.key("attendance")
            instance.attendance(capacity: capacity).write(to: &json)
            json.field("cancelled", instance.cancelled)
            run(.capacityToCreatedBy, &json)
            json.key("dependantRsvps")
            json.array(count: mine.count) { json, index in
                if mine[index].familyMemberId != nil { mine[index].write(to: &json) }
            }
            run(.description, &json)
            json.field("endDate", instance.endDate)
            json.field("endsAt", instance.endsAt)
            run(.exceptionDatesToLocationName, &json)
            json.field("recurrenceId", instance.recurrenceId)
            run(.recurrenceParentIdToRule, &json)
            json.key("rsvp")
            if let rsvp = mine.first(where: { $0.familyMemberId == nil }) { rsvp.write(to: &json) } else { json.null() }
            json.field("rsvpDeadline", instance.rsvpDeadline)
            run(.sequence, &json)
            json.field("startDate", instance.startDate)
            json.field("startsAt", instance.startsAt)
            run(.timeZoneToUpdatedAt, &json)
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
