import Foundation
import OrbitCoveModels

/// One instance: an event's id and, for an instance of a series, its original start.
struct InstanceKey: Hashable, Sendable {
    var eventId: UUID
    var recurrenceId: Date?
}

/// The answers to one instance: its counts and the caller's own (and their dependants').
struct InstanceAnswers: Sendable {
    var counts: AttendanceCounts
    var mine: [EventRSVP]

    /// Whether the caller (or a dependant) said yes or maybe: they still see it cancelled.
    var expectsToAttend: Bool { mine.contains { $0.status != .no } }
}

/// Turns the rows a window read found into the window's instances: series expanded in their
/// zones, overrides in place of the instances they replace, exceptions left out (except, as
/// cancelled, for those who said they would come), ordered by start.
struct EventWindow {
    let window: Range<Date>
    let answers: [InstanceKey: InstanceAnswers]
    /// At most this many instances; a busier window is refused (narrow it).
    let limit: Int

    static let tooBusy = 10_000

    func instances(of rows: [EventRecord]) throws -> [CalendarEvent] {
        var overrides: [UUID: [Date: EventRecord]] = [:]
        for row in rows where row.isOverride {
            if let parent = row.parentId, let recurrenceId = row.recurrenceId {
                overrides[parent, default: [:]][recurrenceId] = row
            }
        }
        var found: [CalendarEvent] = []
        for row in rows where !row.isOverride {
            if row.isSeries {
                try expand(row, overrides: overrides[row.id] ?? [:], into: &found)
            } else if EventRecord.overlaps(start: row.startsAt, end: row.endsAt, window) {
                let key = InstanceKey(eventId: row.id, recurrenceId: nil)
                if !row.cancelled || answers[key]?.expectsToAttend == true {
                    try append(row.event, key, into: &found)
                }
            }
        }
        // By start, then event and instance. The id compares as its two halves, big-endian: the
        // order of its lower-case text, without making the text (keys made once).
        let keys = found.map { event in
            let (high, low) = event.id.halves
            return (event.startsAt, high, low, event.recurrenceId ?? .distantPast)
        }
        return keys.indices.sorted { keys[$0] < keys[$1] }.map { found[$0] }
    }

    private func expand(
        _ series: EventRecord, overrides: [Date: EventRecord], into found: inout [CalendarEvent]
    ) throws {
        guard let expansion = series.expansion() else { return }
        // Instances that started before the window may still be running in it.
        let reach = max(series.endsAt.map { $0.timeIntervalSince(series.startsAt) } ?? 0, 0) + 86_400
        let starts = expansion.occurrences(
            in: window.lowerBound.addingTimeInterval(-reach)..<window.upperBound, limit: limit + 1)
        let generated = series.instances
        var seen = Set<Date>()
        for start in starts {
            seen.insert(start)
            if let record = overrides[start] {
                guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
                try include(series, record, at: start, cancelled: series.cancelled || record.cancelled, into: &found)
                continue
            }
            let key = InstanceKey(eventId: series.id, recurrenceId: start)
            let event = generated.event(at: start)
            guard EventRecord.overlaps(start: event.startsAt, end: event.endsAt, window),
                !series.cancelled || answers[key]?.expectsToAttend == true
            else { continue }
            try append(event, key, into: &found)
        }
        // Overrides moved into the window from an instance outside it.
        for (start, record) in overrides where !seen.contains(start) {
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window),
                !series.exceptionDates.contains(start), series.generates(start)
            else { continue }
            try include(series, record, at: start, cancelled: series.cancelled || record.cancelled, into: &found)
        }
        // Removed instances, for those who said they would come: shown cancelled.
        for start in series.exceptionDates {
            let key = InstanceKey(eventId: series.id, recurrenceId: start)
            guard answers[key]?.expectsToAttend == true else { continue }
            var record = overrides[start] ?? series.generated(at: start)
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
            record.cancelled = true
            try append(record.instance(at: start, of: series), key, into: &found)
        }
    }

    private func include(
        _ series: EventRecord, _ record: EventRecord, at start: Date, cancelled: Bool,
        into found: inout [CalendarEvent]
    ) throws {
        let key = InstanceKey(eventId: series.id, recurrenceId: start)
        guard !cancelled || answers[key]?.expectsToAttend == true else { return }
        try append(record.instance(at: start, of: series), key, into: &found)
    }

    private func append(_ event: CalendarEvent, _ key: InstanceKey, into found: inout [CalendarEvent]) throws {
        guard found.count < limit else { throw CalendarErrors.windowTooBusy(limit) }
        found.append(decorated(event, key))
    }

    /// The instance with the caller's answers and its counts.
    func decorated(_ event: CalendarEvent, _ key: InstanceKey) -> CalendarEvent {
        var event = event
        let answered = answers[key]
        event.rsvp = answered?.mine.first { $0.familyMemberId == nil }
        event.dependantRsvps = answered?.mine.filter { $0.familyMemberId != nil } ?? []
        var counts =
            answered?.counts
            ?? AttendanceCounts(going: 0, seats: 0, maybe: 0, declined: 0, waitlisted: 0, capacity: nil)
        counts.capacity = event.capacity
        event.attendance = counts
        return event
    }
}

extension UUID {
    /// The 16 bytes as two big-endian halves: compared in order, they order ids as their text does.
    fileprivate var halves: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid) { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }
}
