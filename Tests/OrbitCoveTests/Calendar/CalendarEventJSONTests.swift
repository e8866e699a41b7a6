import CoreService
import Foundation
import Hummingbird
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The window read writes events with `JSONWriter`; what it writes must be exactly what the
/// encoder writes for the same events (every field, null or set, nested answers, escapes).
@Suite struct CalendarEventJSONTests {
    @Test(arguments: 0..<40) func theWriterWritesTheEncodersBytes(seed: Int) throws {
        var random = SplitMix(seed: UInt64(seed))
        var events: [CalendarEvent] = []
        for _ in 0..<5 { events.append(Self.event(&random)) }
        let written = try CalendarEvent.json(events).bytes
        let encoded = try JSONCoding.encoder.encodeBytes(events)
        let first =
            zip(written, encoded).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(written.count, encoded.count)
        #expect(
            written == encoded,
            "first difference at \(first): \(String(decoding: written[max(0, first - 60)..<min(written.count, first + 40)], as: UTF8.self)) vs \(String(decoding: encoded[max(0, first - 60)..<min(encoded.count, first + 40)], as: UTF8.self))"
        )
        // And inside the envelope, as the route sends it.
        let meta = ResponseMeta(requestId: "r")
        let envelope = DataEnvelope(data: try CalendarEvent.json(events), meta: meta)
        let expected = DataEnvelope(data: events, meta: meta)
        #expect(try JSONCoding.encoder.encodeBytes(envelope) == JSONCoding.encoder.encodeBytes(expected))
    }

    /// Instances of one series reuse the fields written for the first; an override (same id,
    /// its own title, place or capacity) and a later edit of the series must not.
    @Test(arguments: 0..<20) func instancesShareOnlyWhatTheyHaveInCommon(seed: Int) throws {
        var random = SplitMix(seed: UInt64(seed) + 1_000)
        let series = Self.event(&random)
        var events: [CalendarEvent] = []
        for index in 0..<12 {
            var instance = Self.event(&random)
            // The instance's own fields from a fresh event; the rest from the series.
            var shared = series
            shared.startsAt = instance.startsAt
            shared.endsAt = instance.endsAt
            shared.startDate = instance.startDate
            shared.endDate = instance.endDate
            shared.rsvpDeadline = instance.rsvpDeadline
            shared.recurrenceId = instance.recurrenceId
            shared.cancelled = instance.cancelled
            shared.rsvp = instance.rsvp
            shared.dependantRsvps = instance.dependantRsvps
            shared.attendance = instance.attendance
            switch index % 4 {
            case 1: shared.title = instance.title + " (moved)"
            case 2:
                shared.locationName = instance.locationName
                shared.capacity = instance.capacity
            case 3: shared.updatedAt = instance.updatedAt
            default: break
            }
            instance = shared
            events.append(instance)
        }
        let written = try CalendarEvent.json(events).bytes
        #expect(written == (try JSONCoding.encoder.encodeBytes(events)))
        let meta = ResponseMeta(requestId: "r")
        #expect(
            Array(buffer: try Response.envelope(CalendarEvent.json(events), meta: meta))
                == (try JSONCoding.encoder.encodeBytes(DataEnvelope(data: events, meta: meta))))
    }

    static func event(_ random: inout SplitMix) -> CalendarEvent {
        func maybe<Value>(_ value: @autoclosure () -> Value) -> Value? { random.next() % 2 == 0 ? value() : nil }
        let texts = ["Practice", "Quote \" and \\ back\nslash", "Ünïcödé ⚽️ 🏟️", "", "tab\there \u{1}"]
        func text() -> String { texts[Int(random.next() % UInt64(texts.count))] }
        func date() -> Date { Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000) + 0.123) }
        var event = CalendarEvent(
            id: UUID(), communityId: UUID(), createdBy: UUID(), title: text(), description: maybe(text()),
            startsAt: date(), endsAt: maybe(date()), allDay: random.next() % 2 == 0, startDate: maybe("2026-07-03"),
            endDate: maybe("2026-07-04"), timeZone: "Europe/Berlin", locationName: maybe(text()),
            locationLat: maybe(52.520008), locationLng: maybe(-13.4), locationAddress: maybe(text()),
            category: EventCategory.allCases[Int(random.next() % 5)],
            attachments: random.next() % 3 == 0 ? [.object(["name": .string(text()), "size": .number(12)])] : [],
            rsvpDeadline: maybe(date()), capacity: maybe(Int(random.next() % 100)),
            recurrenceRule: maybe("FREQ=WEEKLY;BYDAY=TU"),
            exceptionDates: random.next() % 2 == 0 ? [date(), date()] : [],
            recurrenceParentId: maybe(UUID()), recurrenceId: maybe(date()), cancelled: random.next() % 2 == 0,
            sequence: Int(random.next() % 9), createdAt: date(), updatedAt: date())
        if random.next() % 2 == 0 {
            event.rsvp = EventRSVP(
                familyMemberId: nil, status: .yes, plusOnes: 2, note: maybe(text()), waitlisted: true,
                respondedAt: date())
        }
        if random.next() % 2 == 0 {
            event.dependantRsvps = [
                EventRSVP(
                    familyMemberId: UUID(), status: .maybe, plusOnes: 0, note: nil, waitlisted: false,
                    respondedAt: date())
            ]
        }
        if random.next() % 3 != 0 {
            event.attendance = AttendanceCounts(
                going: 3, seats: 5, maybe: 1, declined: 0, waitlisted: 2, capacity: maybe(5))
        }
        return event
    }
}

/// A small seeded generator, so a failing case can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
