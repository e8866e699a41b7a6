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
    package func json(answers: (InstanceKey) -> InstanceAnswers?) -> RawJSON {
        RenderedWindow(self).json(answers: answers)
    }
}

/// Every instance of a window as JSON but for its answers: one text, cut where each instance's
/// counts, dependants' answers and own answer go (keys in the encoder's sorted order).
package struct RenderedWindow: Sendable {
    private let text: [UInt8]
    private let instances: [Cuts]
    /// Each instance's place in ``instances``, by whose answers it shows.
    private let places: [InstanceKey: Int]

    /// One instance: whose answers it shows, its cancellation and capacity, and where its text
    /// starts (ends: where the next one starts) and each of its holes is.
    private struct Cuts {
        var key: InstanceKey
        var cancelled: Bool
        var capacity: Int?
        var start: Int
        var attendance: Int
        var dependants: Int
        var rsvp: Int
    }

    package init(_ window: CalendarWindow) {
        var json = JSONWriter(capacity: window.instances.count * 1_024)
        var instances: [Cuts] = []
        instances.reserveCapacity(window.instances.count)
        for instance in window.instances {
            let source = window.sources[instance.source]
            let event = source.event
            var cuts = Cuts(
                key: InstanceKey(eventId: event.id, recurrenceId: instance.recurrenceId),
                cancelled: instance.cancelled, capacity: event.capacity, start: json.bytes.count, attendance: 0,
                dependants: 0, rsvp: 0)
            source.json.withUnsafeBufferPointer { shared in
                func run(_ run: CalendarEvent.SharedRun) -> UnsafeBufferPointer<UInt8> {
                    UnsafeBufferPointer(rebasing: shared[source.runs[run.rawValue]])
                }
                json.detached { json in
                    json.members(run(.allDayToAttachments))
                    json.key("attendance")
                }
                cuts.attendance = json.bytes.count
                json.detached { json in
                    json.field("cancelled", instance.cancelled)
                    json.members(run(.capacityToCreatedBy))
                    json.key("dependantRsvps")
                }
                cuts.dependants = json.bytes.count
                json.detached { json in
                    json.members(run(.description))
                    json.field("endDate", instance.endDate)
                    json.field("endsAt", instance.endsAt)
                    json.members(run(.exceptionDatesToLocationName))
                    json.field("recurrenceId", instance.recurrenceId)
                    json.members(run(.recurrenceParentIdToRule))
                    json.key("rsvp")
                }
                cuts.rsvp = json.bytes.count
                json.detached { json in
                    json.field("rsvpDeadline", instance.rsvpDeadline)
                    json.members(run(.sequence))
                    json.field("startDate", instance.startDate)
                    json.field("startsAt", instance.startsAt)
                    json.members(run(.timeZoneToUpdatedAt))
                }
            }
            instances.append(cuts)
        }
        text = json.bytes
        self.instances = instances
        places = Dictionary(instances.enumerated().map { ($1.key, $0) }) { first, _ in first }
    }

    /// About how many bytes it keeps (its places' table counted at twice their size).
    var size: Int {
        text.count + instances.count * (MemoryLayout<Cuts>.stride + 2 * MemoryLayout<(InstanceKey, Int)>.stride)
    }

    /// The instances a reader with `answers` is shown (``CalendarWindow/isShown(cancelled:to:)``), with
    /// their answers and counts.
    package func json(answers: (InstanceKey) -> InstanceAnswers?) -> RawJSON {
        json(placed: instances.map { answers($0.key) })
    }

    /// The instances a reader is shown, with the answers statement's `rows` (in any order).
    func json(rows: [AnswerTable.Row]) -> RawJSON {
        json(placed: placed(rows))
    }

    /// The answers in `rows` in their instances' places (nil where nobody answered), several
    /// answers to one instance in the order they were given, as ``AnswerTable`` has them: a
    /// hash per row instead of sorting them all and then a hash and a search per instance.
    private func placed(_ rows: [AnswerTable.Row]) -> [InstanceAnswers?] {
        var placed = [InstanceAnswers?](repeating: nil, count: instances.count)
        /// The answers of places answered more than once, with when each was given.
        var several: [Int: [AnswerTable.Row]] = [:]
        var first = [AnswerTable.Row?](repeating: nil, count: instances.count)
        for row in rows {
            guard let place = places[row.key] else { continue }
            guard let rsvp = row.rsvp else {
                if placed[place] == nil { placed[place] = InstanceAnswers(counts: row.counts, mine: []) }
                continue
            }
            if let earlier = first[place] {
                several[place, default: [earlier]].append(row)
            } else {
                first[place] = row
                placed[place] = InstanceAnswers(counts: row.counts, mine: [rsvp])
            }
        }
        for (place, rows) in several {
            placed[place]?.mine = AnswerTable.ordered(rows).compactMap(\.rsvp)
        }
        return placed
    }

    private func json(placed answers: [InstanceAnswers?]) -> RawJSON {
        var json = JSONWriter(capacity: text.count + instances.count * 160)
        text.withUnsafeBufferPointer { text in
            instances.withUnsafeBufferPointer { instances in
                func part(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
                    UnsafeBufferPointer(rebasing: text[range])
                }
                json.array(count: instances.count) { json, index in
                    let cuts = instances[index]
                    let answers = answers[index]
                    guard CalendarWindow.isShown(cancelled: cuts.cancelled, to: answers) else { return }
                    let end = index + 1 < instances.count ? instances[index + 1].start : text.count
                    let mine = answers?.mine ?? []
                    json.open(membersThenKey: part(cuts.start..<cuts.attendance))
                    InstanceAnswers.attendance(answers, capacity: cuts.capacity).write(to: &json)
                    json.membersThenKey(part(cuts.attendance..<cuts.dependants))
                    json.array(count: mine.count) { json, index in
                        if mine[index].familyMemberId != nil { mine[index].write(to: &json) }
                    }
                    json.membersThenKey(part(cuts.dependants..<cuts.rsvp))
                    if let rsvp = mine.first(where: { $0.familyMemberId == nil }) {
                        rsvp.write(to: &json)
                    } else {
                        json.null()
                    }
                    json.close(members: part(cuts.rsvp..<end))
                }
            }
        }
        return json.raw
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
