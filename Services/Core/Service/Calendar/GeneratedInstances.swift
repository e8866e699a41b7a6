import Foundation
import OrbitCoveModels

extension EventRecord {
    /// The series' generated instances as clients see them (a window makes this once per
    /// series: what the instances share is made and its zone looked up once).
    var generatedInstances: GeneratedInstances { GeneratedInstances(series: self) }
}

/// A series' instances as clients see them, each from one template of what they share.
struct GeneratedInstances: Sendable {
    let series: EventRecord
    /// The series as each of its instances shows it, but for the instance's own times.
    let template: CalendarEvent
    private let zone: TimeZone

    /// What differs between the series' instances (besides answers).
    struct Times {
        var startsAt: Date
        var endsAt: Date?
        var startDate: String?
        var endDate: String?
        var rsvpDeadline: Date?
    }

    init(series: EventRecord) {
        self.series = series
        zone = series.zone
        var template = series.event
        template.recurrenceParentId = nil
        template.exceptionDates = []
        self.template = template
    }

    /// The times of the instance the series generates at `start` (what
    /// ``EventRecord/generated(at:)`` stores for it).
    func times(at start: Date) -> Times {
        let end = series.end(forStart: start, in: zone)
        return Times(
            startsAt: start, endsAt: end,
            startDate: series.allDay ? CalendarEvent.date(of: start, in: zone) : nil,
            endDate: series.allDay ? end.map { CalendarEvent.date(of: $0, in: zone) } : nil,
            rsvpDeadline: series.deadline(forStart: start))
    }

    /// The instance at `start`, named by the series' id and `start`.
    func event(at start: Date) -> CalendarEvent {
        let times = times(at: start)
        var event = template
        event.startsAt = times.startsAt
        event.endsAt = times.endsAt
        event.startDate = times.startDate
        event.endDate = times.endDate
        event.rsvpDeadline = times.rsvpDeadline
        event.recurrenceId = start
        return event
    }
}
