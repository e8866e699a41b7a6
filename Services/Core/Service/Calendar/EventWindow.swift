import Foundation
import OrbitCoveModels

/// One instance: an event's id and, for an instance of a series, its original start.
struct InstanceKey: Hashable, Sendable {
    var eventId: UUID
    var recurrenceId: Date?
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
/// zones, overrides in place of the instances they replace, exceptions left out (except, as
/// cancelled, for those who said they would come), ordered by start.
struct EventWindow {
    let window: Range<Date>
    let answers: AnswerTable
    /// At most this many instances; a busier window is refused (narrow it).
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
                let mine = answers[InstanceKey(eventId: row.record.id, recurrenceId: nil)]
                guard !row.record.cancelled || mine?.expectsToAttend == true,
                    let source = try row.windowParts().source
                else { continue }
                guard found.instances.count < limit else { throw CalendarErrors.windowTooBusy(limit) }
                found.append(source, answers: mine)
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
        let answered = answers.answers(to: series.id)
        var shared: Int?
        // Only overrides need to know which instances were seen (most series have none).
        var seen = Set<Date>()
        for start in starts {
            if !overrides.isEmpty { seen.insert(start) }
            if let record = overrides[start] {
                guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
                try include(
                    series, record, at: start, cancelled: series.cancelled || record.cancelled,
                    answers: answered[start], into: &found)
                continue
            }
            let instance = generated.times(at: start)
            guard EventRecord.overlaps(start: instance.startsAt, end: instance.endsAt, window) else { continue }
            let mine = answered[start]
            guard !series.cancelled || mine?.expectsToAttend == true else { continue }
            guard found.instances.count < limit else { throw CalendarErrors.windowTooBusy(limit) }
            let index = shared ?? found.addSource(source)
            shared = index
            found.instances.append(
                CalendarWindow.Instance(
                    source: index, startsAt: instance.startsAt, endsAt: instance.endsAt,
                    startDate: instance.startDate, endDate: instance.endDate, rsvpDeadline: instance.rsvpDeadline,
                    recurrenceId: start, cancelled: series.cancelled, answers: mine))
        }
        // Overrides moved into the window from an instance outside it.
        for (start, record) in overrides where !seen.contains(start) {
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window),
                !series.exceptionDates.contains(start), series.generates(start)
            else { continue }
            try include(
                series, record, at: start, cancelled: series.cancelled || record.cancelled, answers: answered[start],
                into: &found)
        }
        // Removed instances, for those who said they would come: shown cancelled.
        for start in series.exceptionDates {
            let mine = answered[start]
            guard mine?.expectsToAttend == true else { continue }
            let record = overrides[start] ?? series.generated(at: start)
            guard EventRecord.overlaps(start: record.startsAt, end: record.endsAt, window) else { continue }
            var event = record.instance(at: start, of: series)
            event.cancelled = true
            try append(event, mine, into: &found)
        }
    }

    private func include(
        _ series: EventRecord, _ record: EventRecord, at start: Date, cancelled: Bool, answers mine: InstanceAnswers?,
        into found: inout CalendarWindow
    ) throws {
        guard !cancelled || mine?.expectsToAttend == true else { return }
        try append(record.instance(at: start, of: series), mine, into: &found)
    }

    private func append(_ event: CalendarEvent, _ mine: InstanceAnswers?, into found: inout CalendarWindow) throws {
        guard found.instances.count < limit else { throw CalendarErrors.windowTooBusy(limit) }
        try found.append(event, answers: mine)
    }

    /// The instance with the caller's answers and its counts.
    func decorated(_ event: CalendarEvent, _ key: InstanceKey) throws -> CalendarEvent {
        var window = CalendarWindow()
        try window.append(event, answers: answers[key])
        return window.events[0]
    }
}
