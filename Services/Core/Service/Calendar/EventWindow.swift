import Foundation
import OrbitCoveModels

/// One instance: an event's id and, for an instance of a series, its original start.
package struct InstanceKey: Hashable, Sendable {
    package var eventId: UUID
    package var recurrenceId: Date?

    package init(eventId: UUID, recurrenceId: Date?) {
        self.eventId = eventId
        self.recurrenceId = recurrenceId
    }
}

/// The answers to one instance: its counts and the caller's own (and their dependants').
package struct InstanceAnswers: Sendable {
    package var counts: AttendanceCounts
    package var mine: [EventRSVP]

    package init(counts: AttendanceCounts, mine: [EventRSVP]) {
        self.counts = counts
        self.mine = mine
    }

    /// Whether the caller (or a dependant) said yes or maybe: they still see it cancelled.
    var expectsToAttend: Bool { mine.contains { $0.status != .no } }
}

/// Turns the rows a window read found into the window's instances: series expanded in their
/// zones, overrides in place of the instances they replace, exceptions as cancelled instances
/// (which only those who said they would come are shown), ordered by start. Nothing in it depends
/// on who reads it: the rows decide it (``KnownWindows`` keeps it for the next read of them).
struct EventWindow {
    let window: Range<Date>
    /// At most this many instances shown to every reader, and as many cancelled ones (shown
    /// only to those who said they would come); a busier window is refused (narrow it).
    /// ``RenderedWindow`` holds each reader to the same limit on what they are shown.
    let limit: Int
    /// Series' starts expanded before.
    let expansions: KnownExpansions

    static let tooBusy = 10_000

    func instances(of rows: [KnownEvent]) throws -> CalendarWindow {
        var overrides: [UUID: [Date: EventRecord]] = [:]
        for row in rows where row.record.isOverride {
            if let parent = row.record.parentId, let recurrenceId = row.record.recurrenceId {
                overrides[parent, default: [:]][recurrenceId] = row.record
            }
        }
        var found = CalendarWindow()
        for row in rows where !row.record.isOverride {
            if row.record.isSeries {
                let parts = try row.windowParts()
                guard let generated = parts.generated, let source = parts.source else { continue }
                try expand(
                    row.record, generated, source, overrides: overrides[row.record.id] ?? [:], into: &found)
            } else if EventRecord.overlaps(start: row.record.startsAt, end: row.record.endsAt, window) {
                guard let source = try row.windowParts().source else { continue }
                try admit(cancelled: source.event.cancelled, into: found)
                found.append(source)
            }
        }
        found.sort()
        return found
    }

    /// The instances of `series` in the window: `generated` and `source` are what they share.
    private func expand(
        _ series: EventRecord, _ generated: GeneratedInstances, _ source: WindowSource,
        overrides: [Date: EventRecord], into found: inout CalendarWindow
    ) throws {
        guard series.rule != nil else { return }
        // Instances that started before the window may still be running in it.
        let starts = expansions.starts(
            of: series.id, sequence: series.sequence, updatedAt: series.updatedAt,
            in: window.lowerBound.addingTimeInterval(-series.instanceReach)..<window.upperBound, most: limit + 1
        ) { series.expansion() }
        var shared: Int?
        // Only overrides need to know which instances were seen (most series have none).
        var seen = Set<Date>()
        for start in starts {
            if !overrides.isEmpty { seen.insert(start) }
            if let record = overrides[start] {
                guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
                try append(record.instance(at: start, of: series), into: &found)
                continue
            }
            let instance = generated.times(at: start)
            guard EventRecord.overlaps(start: instance.startsAt, end: instance.endsAt, window) else { continue }
            try admit(cancelled: series.cancelled, into: found)
            let index = shared ?? found.addSource(source)
            shared = index
            found.add(
                CalendarWindow.Instance(
                    source: index, startsAt: instance.startsAt, endsAt: instance.endsAt,
                    startDate: instance.startDate, endDate: instance.endDate, rsvpDeadline: instance.rsvpDeadline,
                    recurrenceId: start, cancelled: series.cancelled))
        }
        // Overrides moved into the window from an instance outside it.
        for (start, record) in overrides where !seen.contains(start) {
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window),
                !series.exceptionDates.contains(start), series.generates(start)
            else { continue }
            try append(record.instance(at: start, of: series), into: &found)
        }
        // Removed instances: shown cancelled, to those who said they would come.
        for start in series.exceptionDates {
            let record = overrides[start] ?? series.generated(at: start)
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
            var event = record.instance(at: start, of: series)
            event.cancelled = true
            try append(event, into: &found)
        }
    }

    private func append(_ event: CalendarEvent, into found: inout CalendarWindow) throws {
        try admit(cancelled: event.cancelled, into: found)
        try found.append(event)
    }

    /// Refuses the window when one more instance would make it too busy.
    private func admit(cancelled: Bool, into found: CalendarWindow) throws {
        let count = cancelled ? found.cancelledCount : found.instances.count - found.cancelledCount
        guard count < limit else { throw CalendarErrors.windowTooBusy(limit) }
    }
}
