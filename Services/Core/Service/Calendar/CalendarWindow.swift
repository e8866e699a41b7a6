import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// A window's instances, kept as what each shares with its source (a series' instances share
/// everything but their times, deadline and cancellation) and what is its own: a window is over a
/// thousand instances of a few hundred events, and making and writing each as a full
/// ``CalendarEvent`` was most of the read's time.
///
/// It holds every instance of the rows it was made from, whoever reads it: a cancelled instance
/// too, which only those who said they would come are shown (``isShown(cancelled:to:)``), so the same
/// window serves every member who reads the same rows (``KnownWindows``), and each reader's
/// answers and counts are added as it is written (``json(answers:)``).
///
/// ``events(answers:)`` is each instance a reader is shown, as a client sees it; ``json(answers:)``
/// writes exactly those events as the encoder would (`CalendarWindowJSONTests` compares the
/// bytes).
package struct CalendarWindow {
    /// The events instances come from: a single event, a series' instance template (see
    /// ``GeneratedInstances``), or one override. Their own per-instance fields are not used.
    /// Those of stored rows are made once per version of the row (``KnownEvents``).
    package var sources: [WindowSource] = []
    package var instances: [Instance] = []
    /// How many of ``instances`` are cancelled (shown only to those who said they would come).
    private(set) var cancelledCount = 0

    package init() {}

    /// What an instance does not share with its source. Its answers are those to its source's
    /// event at its `recurrenceId` (a series' for an override: an override's source is its
    /// instance, with the series' id).
    package struct Instance {
        package var source: Int
        package var startsAt: Date
        package var endsAt: Date?
        package var startDate: String?
        package var endDate: String?
        package var rsvpDeadline: Date?
        package var recurrenceId: Date?
        package var cancelled: Bool

        package init(
            source: Int, startsAt: Date, endsAt: Date?, startDate: String?, endDate: String?, rsvpDeadline: Date?,
            recurrenceId: Date?, cancelled: Bool
        ) {
            self.source = source
            self.startsAt = startsAt
            self.endsAt = endsAt
            self.startDate = startDate
            self.endDate = endDate
            self.rsvpDeadline = rsvpDeadline
            self.recurrenceId = recurrenceId
            self.cancelled = cancelled
        }

        /// The instance's own fields, as `event` has them.
        init(source: Int, _ event: CalendarEvent) {
            self.init(
                source: source, startsAt: event.startsAt, endsAt: event.endsAt, startDate: event.startDate,
                endDate: event.endDate, rsvpDeadline: event.rsvpDeadline, recurrenceId: event.recurrenceId,
                cancelled: event.cancelled)
        }
    }

    /// Adds `event` as an instance of its own (an override, a removed instance).
    package mutating func append(_ event: CalendarEvent) throws {
        append(try WindowSource(event))
    }

    /// Adds `source`'s event as an instance of its own (a single event).
    package mutating func append(_ source: WindowSource) {
        sources.append(source)
        add(Instance(source: sources.count - 1, source.event))
    }

    /// Adds an instance of a source added before.
    package mutating func add(_ instance: Instance) {
        instances.append(instance)
        if instance.cancelled { cancelledCount += 1 }
    }

    /// Adds a source many instances will share; its index.
    package mutating func addSource(_ event: CalendarEvent) throws -> Int {
        addSource(try WindowSource(event))
    }

    /// Adds a source many instances will share; its index.
    package mutating func addSource(_ source: WindowSource) -> Int {
        sources.append(source)
        return sources.count - 1
    }

    /// Orders the instances by start, then event and instance. The id compares as its two
    /// halves, big-endian: the order of its lower-case text, without making the text.
    mutating func sort() {
        let keys = instances.map { instance in
            let (high, low) = sources[instance.source].event.id.halves
            return (instance.startsAt, high, low, instance.recurrenceId ?? .distantPast)
        }
        instances = keys.indices.sorted { keys[$0] < keys[$1] }.map { instances[$0] }
    }

    /// Whose answers `instance` shows: its source's event (a series' for an override) at its
    /// `recurrenceId`.
    package func key(_ instance: Instance) -> InstanceKey {
        InstanceKey(eventId: sources[instance.source].event.id, recurrenceId: instance.recurrenceId)
    }

    /// Whether a reader with `answers` (theirs and their dependants') to an instance is shown it: a
    /// cancelled instance only to those who said yes or maybe, so they learn it is off.
    static func isShown(cancelled: Bool, to answers: InstanceAnswers?) -> Bool {
        !cancelled || answers?.expectsToAttend == true
    }

    /// Each instance a reader with `answers` is shown, as a client sees it.
    package func events(answers: (InstanceKey) -> InstanceAnswers?) -> [CalendarEvent] {
        instances.compactMap { instance in
            let mine = answers(key(instance))
            return Self.isShown(cancelled: instance.cancelled, to: mine) ? event(instance, answers: mine) : nil
        }
    }

    /// `instance` with `answers` (theirs and their dependants') and its counts.
    func event(_ instance: Instance, answers: InstanceAnswers?) -> CalendarEvent {
        var event = sources[instance.source].event
        event.startsAt = instance.startsAt
        event.endsAt = instance.endsAt
        event.startDate = instance.startDate
        event.endDate = instance.endDate
        event.rsvpDeadline = instance.rsvpDeadline
        event.recurrenceId = instance.recurrenceId
        event.cancelled = instance.cancelled
        Self.decorate(&event, answers: answers)
        return event
    }

    /// `event` with `answers` (theirs and their dependants') and its counts.
    static func decorate(_ event: inout CalendarEvent, answers: InstanceAnswers?) {
        let mine = answers?.mine ?? []
        event.rsvp = mine.first { $0.familyMemberId == nil }
        event.dependantRsvps = mine.filter { $0.familyMemberId != nil }
        event.attendance = InstanceAnswers.attendance(answers, capacity: event.capacity)
    }
}

extension InstanceAnswers {
    /// The counts as shown: with the event's capacity, zero before anyone answered.
    static func attendance(_ answers: InstanceAnswers?, capacity: Int?) -> AttendanceCounts {
        var counts =
            answers?.counts
            ?? AttendanceCounts(going: 0, seats: 0, maybe: 0, declined: 0, waitlisted: 0, capacity: nil)
        counts.capacity = capacity
        return counts
    }
}
