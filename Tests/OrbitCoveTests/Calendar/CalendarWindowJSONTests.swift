import CoreService
import Foundation
import Hummingbird
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The window read writes its instances with `JSONWriter`, copying what a series' instances
/// share and, from a window written once for every reader, each instance's text but its answers;
/// what it writes for a reader must be exactly what the encoder writes for the events that reader
/// is shown (every field, null or set, nested answers, escapes; a cancelled instance only for
/// those who said yes or maybe), whichever instances share a source.
@Suite struct CalendarWindowJSONTests {
    @Test(arguments: 0..<60) func theWriterWritesTheEncodersBytes(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        var window = CalendarWindow()
        // Sources used once (single events, overrides) and sources many instances share.
        for _ in 0..<4 {
            let source = try window.addSource(Self.event(&random))
            for _ in 0..<Int(random.next() % 4) + 1 {
                let own = Self.event(&random)
                window.add(
                    CalendarWindow.Instance(
                        source: source, startsAt: own.startsAt, endsAt: own.endsAt, startDate: own.startDate,
                        endDate: own.endDate, rsvpDeadline: own.rsvpDeadline, recurrenceId: own.recurrenceId,
                        cancelled: own.cancelled))
            }
        }
        try window.append(Self.event(&random))
        window.instances.shuffle(using: &random)
        let rendered = RenderedWindow(window, limit: .max)
        // Two readers of the one written window, each with answers of their own.
        for _ in 0..<2 {
            var answers: [InstanceKey: InstanceAnswers] = [:]
            for instance in window.instances {
                let key = InstanceKey(
                    eventId: window.sources[instance.source].event.id, recurrenceId: instance.recurrenceId)
                answers[key] = Self.answers(&random)
            }
            let written = try rendered.json { answers[$0] }.bytes
            let events = window.events { answers[$0] }
            let encoded = try JSONCoding.encoder.encodeBytes(events)
            let first =
                zip(written, encoded).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(written.count, encoded.count)
            #expect(
                written == encoded,
                "first difference at \(first): \(String(decoding: written[max(0, first - 60)..<min(written.count, first + 40)], as: UTF8.self)) vs \(String(decoding: encoded[max(0, first - 60)..<min(encoded.count, first + 40)], as: UTF8.self))"
            )
            #expect(try window.json { answers[$0] }.bytes == written)
            // A cancelled instance is shown to those who said yes or maybe, and only to them.
            let shown = window.instances.filter { instance in
                let key = InstanceKey(
                    eventId: window.sources[instance.source].event.id, recurrenceId: instance.recurrenceId)
                return !instance.cancelled || answers[key]?.mine.contains { $0.status != .no } == true
            }
            #expect(events.count == shown.count)
            // And inside the envelope, as the route sends it: in one buffer, or in parts around
            // the window kept for its reader.
            let meta = ResponseMeta(requestId: "r")
            let enveloped = try JSONCoding.encoder.encodeBytes(DataEnvelope(data: events, meta: meta))
            #expect(Array(buffer: try Response.envelope(rendered.json { answers[$0] }, meta: meta)) == enveloped)
            let parts = try Response.envelope(
                parts: ByteBuffer(bytes: rendered.json { answers[$0] }.bytes), meta: meta)
            #expect(parts.flatMap { Array(buffer: $0) } == enveloped)
        }
    }

    /// A window holds its cancelled instances for every reader, but its limit counts what one
    /// reader is shown: three instances, one cancelled, under a limit of two, are two for one who
    /// did not answer the cancelled one and three, refused, for one who said yes to it.
    @Test func theLimitCountsWhatAReaderIsShown() throws {
        var random = SplitMix64(seed: 20_261_130)
        var window = CalendarWindow()
        var events: [CalendarEvent] = []
        for cancelled in [false, true, false] {
            var event = Self.event(&random)
            event.cancelled = cancelled
            event.recurrenceId = nil
            events.append(event)
            try window.append(event)
        }
        let rendered = RenderedWindow(window, limit: 2)
        let quiet = try JSONCoding.decoder.decode([CalendarEvent].self, from: Data(rendered.json { _ in nil }.bytes))
        #expect(quiet.map(\.id) == [events[0].id, events[2].id])
        let yes = InstanceAnswers(
            counts: AttendanceCounts(going: 1, seats: 1, maybe: 0, declined: 0, waitlisted: 0, capacity: nil),
            mine: [
                EventRSVP(
                    familyMemberId: nil, status: .yes, plusOnes: 0, note: nil, waitlisted: false,
                    respondedAt: Date(timeIntervalSince1970: 1_800_000_000))
            ])
        #expect(throws: APIError.self) {
            try rendered.json { $0.eventId == events[1].id ? yes : nil }
        }
    }

    /// An instance's answers: none, counts only, the caller's own, their dependants'.
    static func answers(_ random: inout SplitMix64) -> InstanceAnswers? {
        guard random.next() % 4 != 0 else { return nil }
        var mine: [EventRSVP] = []
        if random.next() % 2 == 0 {
            mine.append(
                EventRSVP(
                    familyMemberId: nil, status: random.next() % 2 == 0 ? .yes : .no, plusOnes: 2,
                    note: random.next() % 2 == 0 ? "late \"ish\"" : nil,
                    waitlisted: true, respondedAt: Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000))))
        }
        for _ in 0..<Int(random.next() % 3) {
            mine.insert(
                EventRSVP(
                    familyMemberId: UUID(), status: .maybe, plusOnes: 0, note: nil, waitlisted: false,
                    respondedAt: Date(timeIntervalSince1970: 1_800_000_000.25)),
                at: Int(random.next() % UInt64(mine.count + 1)))
        }
        return InstanceAnswers(
            counts: AttendanceCounts(
                going: Int(random.next() % 30), seats: 5, maybe: 1, declined: 0, waitlisted: 2, capacity: 99),
            mine: mine)
    }

    static func event(_ random: inout SplitMix64) -> CalendarEvent {
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
