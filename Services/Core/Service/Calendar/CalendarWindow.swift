import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// A window read's instances, kept as what each shares with its source (a series' instances
/// share everything but their times, deadline, cancellation and answers) and what is its own:
/// a window is over a thousand instances of a few hundred events, and making and writing each
/// as a full ``CalendarEvent`` was most of the read's time.
///
/// ``events`` is each instance as a client sees it; ``json()`` writes exactly those events as the
/// encoder would (`CalendarWindowJSONTests` compares the bytes).
package struct CalendarWindow {
    /// The events instances come from: a single event, a series' instance template (see
    /// ``GeneratedInstances``), or one override. Their own per-instance fields are not used.
    /// Those of stored rows are made once per version of the row (``KnownEvents``).
    package var sources: [WindowSource] = []
    package var instances: [Instance] = []

    package init() {}

    /// What an instance does not share with its source.
    package struct Instance {
        package var source: Int
        package var startsAt: Date
        package var endsAt: Date?
        package var startDate: String?
        package var endDate: String?
        package var rsvpDeadline: Date?
        package var recurrenceId: Date?
        package var cancelled: Bool
        /// Its counts and the caller's answers (none yet: zero counts, no answers).
        package var answers: InstanceAnswers?

        package init(
            source: Int, startsAt: Date, endsAt: Date?, startDate: String?, endDate: String?, rsvpDeadline: Date?,
            recurrenceId: Date?, cancelled: Bool, answers: InstanceAnswers?
        ) {
            self.source = source
            self.startsAt = startsAt
            self.endsAt = endsAt
            self.startDate = startDate
            self.endDate = endDate
            self.rsvpDeadline = rsvpDeadline
            self.recurrenceId = recurrenceId
            self.cancelled = cancelled
            self.answers = answers
        }

        /// The instance's own fields, as `event` has them.
        init(source: Int, _ event: CalendarEvent, answers: InstanceAnswers?) {
            self.init(
                source: source, startsAt: event.startsAt, endsAt: event.endsAt, startDate: event.startDate,
                endDate: event.endDate, rsvpDeadline: event.rsvpDeadline, recurrenceId: event.recurrenceId,
                cancelled: event.cancelled, answers: answers)
        }
    }

    /// Adds `event` as an instance of its own (an override, a removed instance).
    package mutating func append(_ event: CalendarEvent, answers: InstanceAnswers?) throws {
        append(try WindowSource(event), answers: answers)
    }

    /// Adds `source`'s event as an instance of its own (a single event).
    package mutating func append(_ source: WindowSource, answers: InstanceAnswers?) {
        sources.append(source)
        instances.append(Instance(source: sources.count - 1, source.event, answers: answers))
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

    /// Each instance as a client sees it.
    package var events: [CalendarEvent] { instances.map(event) }

    func event(_ instance: Instance) -> CalendarEvent {
        var event = sources[instance.source].event
        event.startsAt = instance.startsAt
        event.endsAt = instance.endsAt
        event.startDate = instance.startDate
        event.endDate = instance.endDate
        event.rsvpDeadline = instance.rsvpDeadline
        event.recurrenceId = instance.recurrenceId
        event.cancelled = instance.cancelled
        let mine = instance.answers?.mine ?? []
        event.rsvp = mine.first { $0.familyMemberId == nil }
        event.dependantRsvps = mine.filter { $0.familyMemberId != nil }
        event.attendance = instance.attendance(capacity: event.capacity)
        return event
    }
}

extension CalendarWindow.Instance {
    /// The counts as shown: with the event's capacity, zero before anyone answered.
    func attendance(capacity: Int?) -> AttendanceCounts {
        var counts =
            answers?.counts
            ?? AttendanceCounts(going: 0, seats: 0, maybe: 0, declined: 0, waitlisted: 0, capacity: nil)
        counts.capacity = capacity
        return counts
    }
}
