import CoreService
import Foundation
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A window read takes the window kept for its rows by the digest of their versions alone
/// (`KnownWindows`, `VersionsDigest`), with its answers read as its first read bound them, and
/// makes a new one when a row changed; a reader reading it again, nobody having answered since,
/// takes the text last written for them (`KnownWindows.ReaderCopy`).
@Suite struct CalendarWindowDigestTests {
    /// A store of its own over `database`, keeping its windows in `windows`.
    static func store(_ database: Database, _ windows: KnownWindows) -> EventStore {
        EventStore(
            database: database, events: EventRows(known: KnownEvents(limit: 1_000)),
            expansions: KnownExpansions(limit: 1_000), windows: windows, logger: TestEnvironment.logger)
    }

    /// `store`'s window over `span` as `person` reads it: its text, and its instances.
    static func read(
        _ store: EventStore, _ span: Range<Date>, in club: Community, as person: CoreHarness.Person
    ) async throws -> (bytes: [UInt8], events: [CalendarEvent]) {
        let bytes = Array(try await store.window(span, in: club.id, viewer: person.id).readableBytesView)
        return (bytes, try JSONCoding.decoder.decode([CalendarEvent].self, from: Data(bytes)))
    }

    @Test func aKeptWindowIsTakenByItsDigestUntilARowChanges() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let events = "/api/v1/communities/\(club.id)/events"
            // Four instances in May, and the one of 17 June moved into May, answered where it
            // was: the answers statement reads past the window's end for it.
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-05-06T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=8"}"#)
            let answer = #"{"status":"yes","recurrenceId":"2031-06-17T16:00:00Z"}"#
            #expect(try await api.call(.post, "\(events)/\(practice.id)/rsvp", as: ada, json: answer).status == .ok)
            let moved = try await api.call(
                .patch, "\(events)/\(practice.id)?recurrenceId=2031-06-17T16:00:00Z", as: coach,
                json: #"{"startsAt":"2031-05-30T10:00:00Z"}"#)
            #expect(moved.status == .ok)
            let may = try #require(ISO8601DateFormatter().date(from: "2031-05-01T00:00:00Z"))
            let june = try #require(ISO8601DateFormatter().date(from: "2031-06-01T00:00:00Z"))

            try await withTestDatabase { database in
                let windows = KnownWindows(limit: 1 << 24)
                let store = Self.store(database, windows)
                @Sendable func read() async throws -> (bytes: [UInt8], events: [CalendarEvent]) {
                    try await Self.read(store, may..<june, in: club, as: ada)
                }
                let first = try await read()
                #expect(windows.takenByDigest == 0)
                #expect(first.events.map { utc($0.startsAt) }.last == "2031-05-30T10:00:00Z")
                #expect(first.events.last?.rsvp?.status == .yes && first.events.last?.attendance?.going == 1)

                // The same rows: taken by the digest, the moved instance's answer read as before.
                let second = try await read()
                #expect(windows.takenByDigest == 1)
                #expect(second.events.last?.rsvp?.status == .yes && second.events.last?.attendance?.going == 1)
                let same = second.bytes == first.bytes
                #expect(same, "the kept window read other bytes than the first read")

                // An answer changes no event row: the window is still taken, the counts are new.
                let coachComes = #"{"status":"yes","recurrenceId":"2031-05-06T16:00:00Z"}"#
                #expect(
                    try await api.call(.post, "\(events)/\(practice.id)/rsvp", as: coach, json: coachComes).status
                        == .ok)
                let third = try await read()
                #expect(windows.takenByDigest == 2)
                #expect(third.events.first?.attendance?.going == 1 && third.events.first?.rsvp == nil)

                // A row changed behind the service's back: a new window, then that one is taken.
                _ = try await database.systemQuery("UPDATE events SET title = 'Match' WHERE id = \(practice.id)")
                let fourth = try await read()
                #expect(windows.takenByDigest == 2)
                #expect(fourth.events.map(\.title) == ["Match", "Match", "Match", "Match", "Practice"])
                _ = try await read()
                #expect(windows.takenByDigest == 3)

                // A row gone: a new window without it.
                _ = try await database.systemQuery(
                    "UPDATE events SET deleted_at = now() WHERE recurrence_parent_id = \(practice.id)")
                let fifth = try await read()
                #expect(windows.takenByDigest == 3)
                #expect(fifth.events.map { utc($0.startsAt) }.contains("2031-05-30T10:00:00Z") == false)
            }
        }
    }

    @Test func aReaderReadingAgainTakesTheTextWrittenForThemUntilAnAnswerChanges() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: coach)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let events = "/api/v1/communities/\(club.id)/events"
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-05-06T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=4"}"#)
            @Sendable func answer(_ person: CoreHarness.Person, _ status: String, on day: String) async throws {
                let body = #"{"status":"\#(status)","recurrenceId":"2031-05-\#(day)T16:00:00Z"}"#
                #expect(
                    try await api.call(.post, "\(events)/\(practice.id)/rsvp", as: person, json: body).status == .ok)
            }
            try await answer(ada, "yes", on: "06")
            let may = try #require(ISO8601DateFormatter().date(from: "2031-05-01T00:00:00Z"))
            let june = try #require(ISO8601DateFormatter().date(from: "2031-06-01T00:00:00Z"))

            try await withTestDatabase { database in
                let windows = KnownWindows(limit: 1 << 24)
                let store = Self.store(database, windows)
                @Sendable func read(
                    as person: CoreHarness.Person
                ) async throws -> (bytes: [UInt8], events: [CalendarEvent]) {
                    try await Self.read(store, may..<june, in: club, as: person)
                }
                // The window made, then taken by its digest and written for Ada, then her copy.
                let made = try await read(as: ada)
                let written = try await read(as: ada)
                #expect(windows.takenByDigest == 1 && windows.takenAsWritten == 0)
                let copied = try await read(as: ada)
                #expect(windows.takenAsWritten == 1)
                #expect(copied.bytes == written.bytes && written.bytes == made.bytes)
                #expect(copied.events.first?.rsvp?.status == .yes && copied.events.first?.attendance?.going == 1)

                // Ben's answers are not Ada's: his own text, then his own copy.
                let bens = try await read(as: ben)
                #expect(windows.takenAsWritten == 1)
                #expect(bens.events.first?.rsvp == nil && bens.events.first?.attendance?.going == 1)
                #expect(try await read(as: ben).bytes == bens.bytes)
                #expect(windows.takenAsWritten == 2)

                // Ben answers: the counts Ada reads change, so her copy is not taken.
                try await answer(ben, "yes", on: "06")
                let counted = try await read(as: ada)
                #expect(windows.takenByDigest == 5 && windows.takenAsWritten == 2)
                #expect(counted.events.first?.attendance?.going == 2 && counted.events.first?.rsvp?.status == .yes)
                #expect(try await read(as: ada).bytes == counted.bytes)
                #expect(windows.takenAsWritten == 3)

                // Her own answer changed behind the service's back (no count moves): not her copy.
                _ = try await database.systemQuery("UPDATE rsvps SET note = 'Late' WHERE user_id = \(ada.id)")
                let noted = try await read(as: ada)
                #expect(windows.takenByDigest == 7 && windows.takenAsWritten == 3)
                #expect(noted.events.first?.rsvp?.note == "Late")

                // An event row changed: a new window, whose copies start again.
                _ = try await database.systemQuery("UPDATE events SET title = 'Match' WHERE id = \(practice.id)")
                let renamed = try await read(as: ada)
                #expect(windows.takenAsWritten == 3)
                #expect(renamed.events.map(\.title) == ["Match", "Match", "Match", "Match"])
                _ = try await read(as: ada)
                #expect(windows.takenAsWritten == 3)
                #expect(try await read(as: ada).bytes == renamed.bytes)
                #expect(windows.takenAsWritten == 4)

                // Through the route, with the server's own windows: the third read is sent from
                // Ada's copy, in parts, the same text with its length.
                let path = "\(events)?from=2031-05-01T00:00:00Z&to=2031-06-01T00:00:00Z"
                for _ in 0..<3 {
                    let reply = try await api.call(.get, path, as: ada)
                    #expect(reply.status == .ok && reply.headers[.contentLength] == String(reply.body.count))
                    let meta = try #require(reply.body.range(of: Data(#","meta":"#.utf8)))
                    #expect(reply.body[..<meta.lowerBound] == Data(#"{"data":"#.utf8) + Data(renamed.bytes))
                }
            }
        }
    }

    /// A reader's copy is kept only beside its window, within the bound: it makes room by
    /// dropping other copies, never a window.
    @Test func aReadersCopyPushesNoWindowOut() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            _ = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-05-06T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=4"}"#)
            let may = try #require(ISO8601DateFormatter().date(from: "2031-05-01T00:00:00Z"))
            let mid = try #require(ISO8601DateFormatter().date(from: "2031-05-20T00:00:00Z"))
            let june = try #require(ISO8601DateFormatter().date(from: "2031-06-01T00:00:00Z"))
            try await withTestDatabase { database in
                // May, then its first weeks twice (the second read keeps the coach's copy of
                // them), then May again (and a copy of it): the sizes after each read.
                @Sendable func reads(limit: Int) async throws -> (KnownWindows, [Int]) {
                    let windows = KnownWindows(limit: limit)
                    let store = Self.store(database, windows)
                    var sizes: [Int] = []
                    for span in [may..<june, may..<mid, may..<mid, may..<june] {
                        _ = try await store.window(span, in: club.id, viewer: coach.id)
                        sizes.append(windows.size)
                    }
                    return (windows, sizes)
                }
                let (roomy, sizes) = try await reads(limit: 1 << 24)
                #expect(sizes[0] > 0 && sizes[1] > sizes[0] && sizes[2] > sizes[1] && sizes[3] > sizes[2])
                #expect(roomy.takenByDigest == 2)
                // A byte short of both windows and the copy: the copy is not kept, and May is
                // still taken by its digest.
                let (tight, tightSizes) = try await reads(limit: sizes[2] - 1)
                #expect(tightSizes == [sizes[0], sizes[1], sizes[1], sizes[1]])
                #expect(tight.takenByDigest == 2 && tight.takenAsWritten == 0)
            }
        }
    }

    /// Records are the kept ones only byte for byte, none told from empty, none missing or added.
    @Test func recordsAreTheKeptOnesOnlyByteForByte() {
        func records(_ cells: [[UInt8]?]) -> AnswerRecords {
            AnswerRecords(
                cells: cells.enumerated().map { index, bytes in
                    PostgresCell(
                        bytes: bytes.map { ByteBuffer(bytes: $0) }, dataType: .record, format: .binary,
                        columnName: "row", columnIndex: index)
                })
        }
        let kept = records([[1, 2, 3], nil, []]).bytes
        #expect(records([[1, 2, 3], nil, []]).are(kept))
        #expect(!records([[1, 2, 4], nil, []]).are(kept))
        #expect(!records([[1, 2], nil, []]).are(kept))
        #expect(!records([[1, 2, 3], [], nil]).are(kept))
        #expect(!records([[1, 2, 3], nil]).are(kept))
        #expect(!records([[1, 2, 3], nil, [], [5]]).are(kept))
        #expect(records([]).are([]) && !records([]).are(kept) && !records([[1, 2, 3], nil, []]).are([]))
    }
}
