import Foundation
import OrbitCoveModels
import Testing

@testable import CoreService

/// The answers statement's rows placed by instance (``AnswerTable``, and a kept window's own
/// instances): over random events, instances and answers in any order it must find what a
/// dictionary finds, keep several answers to an instance in the order they were given, and find
/// nothing where nobody answered.
@Suite struct AnswerTableTests {
    typealias Expected = [InstanceKey: (counts: AttendanceCounts, mine: [(Date, UUID, EventRSVP)])]

    @Test(arguments: 0..<60) func itFindsWhatADictionaryFinds(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed) &+ 7_001)
        let (rows, expected, absent) = Self.sample(&random)
        let table = AnswerTable(rows)
        for (key, value) in expected {
            let found = table[key]
            #expect(found?.counts == value.counts)
            let order = value.mine.sorted { ($0.0, $0.1.uuidString) < ($1.0, $1.1.uuidString) }.map(\.2)
            #expect(found?.mine == order)
        }
        for key in absent { #expect(table[key] == nil) }
        // Between and around the answered starts of a series: nothing.
        for key in expected.keys {
            guard let start = key.recurrenceId else { continue }
            for offset: TimeInterval in [-1, 1, -604_800 * 20, 604_800 * 20] {
                let near = InstanceKey(eventId: key.eventId, recurrenceId: start.addingTimeInterval(offset))
                #expect(table[near] == nil)
            }
            #expect(table[InstanceKey(eventId: key.eventId, recurrenceId: nil)] == nil)
        }
    }

    /// A window read kept (`RenderedWindow`) places the answers statement's rows in its own
    /// instances: for every instance, answered, unanswered or cancelled, it must write what the
    /// table finds for it, and ignore rows for instances it lacks.
    @Test(arguments: 0..<30) func aKeptWindowPlacesWhatTheTableFinds(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed) &+ 9_001)
        let (rows, expected, absent) = Self.sample(&random)
        let table = AnswerTable(rows)
        var window = CalendarWindow()
        // Every answered and unanswered instance but a few, which the rows answer all the same.
        for key in Array(expected.keys) + absent where random.next() % 5 != 0 {
            var event = CalendarWindowJSONTests.event(&random)
            event.id = key.eventId
            let source = try window.addSource(event)
            window.add(
                CalendarWindow.Instance(
                    source: source, startsAt: event.startsAt, endsAt: event.endsAt, startDate: nil, endDate: nil,
                    rsvpDeadline: nil, recurrenceId: key.recurrenceId, cancelled: random.next() % 3 == 0))
        }
        let rendered = RenderedWindow(window, limit: .max)
        #expect(try rendered.json(rows: rows).bytes == rendered.json { table[$0] }.bytes)
    }

    /// Rows of the answers statement for random events and instances, in any order: what each
    /// answered instance holds, and instances nobody answered.
    static func sample(_ random: inout SplitMix64) -> (rows: [AnswerTable.Row], Expected, absent: [InstanceKey]) {
        var rows: [AnswerTable.Row] = []
        var expected: Expected = [:]
        var absent: [InstanceKey] = [InstanceKey(eventId: Self.id(&random), recurrenceId: nil)]
        for _ in 0..<Int(random.next() % 12) {
            let event = Self.id(&random)
            let series = random.next() % 3 != 0
            // A series' instances a week apart, some of them unanswered (and so absent).
            let starts: [Date?] =
                series
                ? (0..<Int(random.next() % 9 + 1)).map {
                    Date(timeIntervalSince1970: 1_900_000_000 + Double($0) * 604_800)
                } : [nil]
            for start in starts {
                let key = InstanceKey(eventId: event, recurrenceId: start)
                guard random.next() % 4 != 0 else {
                    absent.append(key)
                    continue
                }
                let counts = AttendanceCounts(
                    going: Int(random.next() % 20), seats: Int(random.next() % 30), maybe: Int(random.next() % 5),
                    declined: Int(random.next() % 5), waitlisted: Int(random.next() % 3), capacity: nil)
                let answers = Int(random.next() % 4)
                expected[key] = (counts, [])
                if answers == 0 { rows.append(AnswerTable.Row(key: key, counts: counts)) }
                for _ in 0..<answers {
                    // Given within three seconds of each other, so some at the same moment (then by id).
                    let given = Date(timeIntervalSince1970: 1_800_000_000 + Double(random.next() % 3))
                    let id = Self.id(&random)
                    let rsvp = EventRSVP(
                        familyMemberId: random.next() % 2 == 0 ? nil : Self.id(&random), status: .yes, plusOnes: 0,
                        note: "\(random.next() % 100)", waitlisted: false, respondedAt: given)
                    rows.append(AnswerTable.Row(key: key, counts: counts, rsvp: rsvp, queuedAt: given, id: id))
                    expected[key]?.mine.append((given, id, rsvp))
                }
            }
        }
        rows.shuffle(using: &random)
        return (rows, expected, absent)
    }

    /// An id drawn from `random`, so a failing seed gives the same ids again.
    static func id(_ random: inout SplitMix64) -> UUID {
        let (high, low) = (random.next(), random.next())
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
}
