import Foundation
import OrbitCoveModels

/// The answers a read found, by instance: each instance's counts and the caller's own answers.
///
/// Kept sorted by event and instance rather than hashed by instance, as a window looks up every
/// one of its thousand or more instances: finding an event's instances takes one hash
/// (``answers(to:)``), an instance among them is found by halving, and a series' expansion
/// looks its instances up in its own slice without hashing again.
struct AnswerTable {
    /// Instance starts (``Date/distantPast`` for a single event's one instance), grouped by
    /// event, ascending within each, beside their answers.
    private var starts: [Date] = []
    private var answers: [InstanceAnswers] = []
    /// Where each event's instances are in ``starts`` and ``answers``.
    private var events: [UUID: Range<Int>] = [:]

    init() {}

    /// One row of the answers statement: an instance's counts and, if the caller answered it,
    /// one of their answers (theirs or a dependant's) with when it was given.
    struct Row {
        var key: InstanceKey
        var counts: AttendanceCounts
        var rsvp: EventRSVP?
        var queuedAt = Date.distantPast
        var id = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    }

    /// The rows in any order. Several answers to one instance are kept in the order they were
    /// given (when queued, ties by id as PostgreSQL orders uuids: byte by byte).
    init(_ rows: [Row]) {
        starts.reserveCapacity(rows.count)
        answers.reserveCapacity(rows.count)
        var event: (id: UUID, first: Int)?
        for row in Self.ordered(rows) {
            let start = row.key.recurrenceId ?? .distantPast
            if let current = event, current.id == row.key.eventId {
                if starts.last == start {
                    if let rsvp = row.rsvp { answers[answers.count - 1].mine.append(rsvp) }
                    continue
                }
            } else {
                if let current = event { events[current.id] = current.first..<starts.count }
                event = (row.key.eventId, starts.count)
            }
            starts.append(start)
            answers.append(InstanceAnswers(counts: row.counts, mine: row.rsvp.map { [$0] } ?? []))
        }
        if let current = event { events[current.id] = current.first..<starts.count }
    }

    /// `rows` by event and instance, and several answers to one instance in the order they
    /// were given (when queued, ties by id as PostgreSQL orders uuids: byte by byte).
    static func ordered(_ rows: [Row]) -> [Row] {
        let keys = rows.map { row in
            let (high, low) = row.key.eventId.halves
            let (idHigh, idLow) = row.id.halves
            return (high, low, row.key.recurrenceId ?? .distantPast, row.queuedAt, idHigh, idLow)
        }
        return keys.indices.sorted { keys[$0] < keys[$1] }.map { rows[$0] }
    }

    /// The answers to one instance (nil: nobody answered it yet).
    subscript(key: InstanceKey) -> InstanceAnswers? {
        answers(to: key.eventId)[key.recurrenceId]
    }

    /// The answers to `event`'s instances, to look many of them up with one hash.
    func answers(to event: UUID) -> EventAnswers {
        let range = events[event] ?? 0..<0
        return EventAnswers(starts: starts[range], answers: answers[range])
    }
}

/// The answers to one event's instances, ordered by start.
struct EventAnswers {
    let starts: ArraySlice<Date>
    let answers: ArraySlice<InstanceAnswers>

    /// The answers to the instance at `start` (nil for a single event's one instance).
    subscript(start: Date?) -> InstanceAnswers? {
        let start = start ?? .distantPast
        var (low, high) = (starts.startIndex, starts.endIndex)
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] < start { low = middle + 1 } else { high = middle }
        }
        return low < starts.endIndex && starts[low] == start ? answers[low] : nil
    }
}
