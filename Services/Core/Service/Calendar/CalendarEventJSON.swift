import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// A window written straight to JSON: through `Encodable` its thousands of events were most of
/// the request's time. The bytes are the encoder's for ``CalendarWindow/events(answers:)``
/// (`CalendarWindowJSONTests` compares them), so clients cannot tell.
///
/// The fields an instance shares with its source (all of a series' instances share one) are
/// written once per source (``WindowSource``: once per version of a stored row); each instance's
/// text but its answers is written once per window (``RenderedWindow``: once per version of the
/// window's rows, ``KnownWindows``); a read copies those and writes the reader's answers and the
/// counts between them.
extension CalendarWindow {
    /// The instances a reader with `answers` is shown, as JSON.
    package func json(answers: (InstanceKey) -> InstanceAnswers?) throws -> RawJSON {
        try RenderedWindow(self, limit: .max).json(answers: answers)
    }
}

/// What a window's instances of one event share: the event as each shows it (but for their
/// own fields, which each instance has) and the JSON of the shared fields, written once, in the
/// runs that fall between an instance's own fields in key order.
package final class WindowSource: Sendable {
    package let event: CalendarEvent
    /// Run `r` is `json[runs[r]]`, runs in the order of `SharedRun.allCases` (their raw values).
    let json: [UInt8]
    let runs: [Range<Int>]

    package init(_ event: CalendarEvent) throws {
        self.event = event
        var json = JSONWriter(capacity: 768)
        var runs: [Range<Int>] = []
        runs.reserveCapacity(CalendarEvent.SharedRun.allCases.count)
        for run in CalendarEvent.SharedRun.allCases {
            let start = json.bytes.count
            try json.detached { try event.write(run, to: &$0) }
            runs.append(start..<json.bytes.count)
        }
        self.json = json.bytes
        self.runs = runs
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
