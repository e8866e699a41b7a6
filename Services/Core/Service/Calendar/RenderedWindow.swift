import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// Every instance of a window as JSON but for its answers: one text, cut where each instance's
/// counts, dependants' answers and own answer go (keys in the encoder's sorted order), written
/// once for every reader of the same rows (``KnownWindows``). A read copies the pieces and
/// writes its reader's answers and the counts between them.
package struct RenderedWindow: Sendable {
    private let text: [UInt8]
    private let instances: [Cuts]
    /// Each instance's place in ``instances``, by whose answers it shows.
    private let places: [InstanceKey: Int]
    /// The most instances one reader may be shown; more is `422 WINDOW_TOO_BUSY`.
    private let limit: Int

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

    package init(_ window: CalendarWindow, limit: Int) {
        var json = JSONWriter(capacity: window.instances.count * 1_024)
        var instances: [Cuts] = []
        instances.reserveCapacity(window.instances.count)
        for instance in window.instances {
            let source = window.sources[instance.source]
            var cuts = Cuts(
                key: window.key(instance), cancelled: instance.cancelled, capacity: source.event.capacity,
                start: json.bytes.count, attendance: 0, dependants: 0, rsvp: 0)
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
        // Kept without the writer's spare capacity, so ``size`` is what it holds.
        text = json.bytes.withUnsafeBufferPointer { Array($0) }
        self.instances = instances
        places = Dictionary(instances.enumerated().map { ($1.key, $0) }) { first, _ in first }
        self.limit = limit
    }

    /// About how many bytes it keeps: its text and cuts, and its places' table at twice their
    /// size (a hash table's slack).
    var size: Int {
        text.count + instances.count * (MemoryLayout<Cuts>.stride + 2 * MemoryLayout<(InstanceKey, Int)>.stride)
    }

    /// The instances a reader with `answers` is shown (``CalendarWindow/isShown(cancelled:to:)``), with
    /// their answers and counts.
    package func json(answers: (InstanceKey) -> InstanceAnswers?) throws -> RawJSON {
        try json(placed: instances.map { answers($0.key) })
    }

    /// The instances a reader is shown, with the answers statement's `rows` (in any order) placed
    /// by a hash a row, instead of sorting them into an ``AnswerTable`` and looking each instance
    /// up in it.
    func json(rows: [AnswerTable.Row]) throws -> RawJSON {
        try json(placed: AnswerTable.placed(rows, in: places, count: instances.count))
    }

    private func json(placed answers: [InstanceAnswers?]) throws -> RawJSON {
        var json = JSONWriter(capacity: text.count + instances.count * 160)
        var shown = 0
        try text.withUnsafeBufferPointer { text in
            try instances.withUnsafeBufferPointer { instances in
                func part(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
                    UnsafeBufferPointer(rebasing: text[range])
                }
                try json.array(count: instances.count) { json, index in
                    let cuts = instances[index]
                    let answers = answers[index]
                    guard CalendarWindow.isShown(cancelled: cuts.cancelled, to: answers) else { return }
                    shown += 1
                    guard shown <= limit else { throw CalendarErrors.windowTooBusy(limit) }
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
