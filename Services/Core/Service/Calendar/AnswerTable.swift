import Foundation
import OrbitCoveModels

/// The answers a read found, by instance: each instance's counts and the caller's own answers.
///
/// Kept sorted by event and instance rather than hashed by instance: a window looks up every
/// one of its thousand or more instances, and hashing each key (an id and a date, through
/// SipHash) on the way in and again on the way out was a tenth of the read's time. Finding an
/// event's instances takes one hash (``of(_:)``); an instance among them is found by halving,
/// and a series' expansion looks its instances up in its own slice.
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
    struct Found {
        var key: InstanceKey
        var counts: AttendanceCounts
        var rsvp: EventRSVP?
        var queuedAt = Date.distantPast
        var id = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    }

    /// The rows in any order. Several answers to one instance are kept in the order they were
    /// given (when queued, ties by id as PostgreSQL orders uuids: byte by byte).
    init(_ found: [Found]) {
        let keys = found.map { row in
            let (high, low) = row.key.eventId.halves
            let (idHigh, idLow) = row.id.halves
            return (high, low, row.key.recurrenceId ?? .distantPast, row.queuedAt, idHigh, idLow)
        }
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        starts.reserveCapacity(found.count)
        answers.reserveCapacity(found.count)
        var event: (id: UUID, first: Int)?
        for index in order {
            let row = found[index]
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

    /// The answers to one instance (nil: nobody answered it yet).
    subscript(key: InstanceKey) -> InstanceAnswers? {
        of(key.eventId)[key.recurrenceId]
    }

    /// The answers to `event`'s instances, to look many of them up with one hash.
    func of(_ event: UUID) -> EventAnswers {
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

extension UUID {
    /// The 16 bytes as two big-endian halves: compared in order, they order ids as their text
    /// does, and as PostgreSQL orders uuids.
    var halves: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid) { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }
}
