import Foundation
import OrbitCoveModels
import Testing

/// A window shows every instance that overlaps it, with its answers and counts, wherever the
/// event started and wherever its instance was.
@Suite struct CalendarWindowReachTests {
    /// What runs into a window from before it: a camp over two nights, a series' weekend that
    /// started 39 hours before, a removed instance of a three-day trip that started 60 hours
    /// before (shown cancelled to who said yes); instances moved into the window from two
    /// months earlier and from a series that starts after it (their answers keyed where they
    /// were). What ended as the window begins is not in it. A change to a series outside the
    /// window, one of whose instances moved into it, is seen on the next read.
    @Test func whatRunsIntoTheWindowComesWithItsAnswers() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let events = "/api/v1/communities/\(club.id)/events"
            let camp = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Camp","startsAt":"2031-06-01T08:00:00Z","endsAt":"2031-06-03T10:00:00Z"}"#)
            let evening = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Evening","startsAt":"2031-06-02T20:00:00Z","endsAt":"2031-06-03T00:00:00Z"}"#)
            let weekend = try await api.createEvent(
                in: club, by: coach,
                #"""
                {"title":"Weekend","startsAt":"2031-05-25T09:00:00Z","endsAt":"2031-05-27T11:00:00Z",
                 "recurrenceRule":"FREQ=WEEKLY;COUNT=3"}
                """#)
            let trip = try await api.createEvent(
                in: club, by: coach,
                #"""
                {"title":"Trip","startsAt":"2031-05-31T12:00:00Z","endsAt":"2031-06-03T12:00:00Z",
                 "recurrenceRule":"FREQ=WEEKLY;COUNT=2"}
                """#)
            let league = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"League","startsAt":"2031-04-01T18:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=2"}"#)
            let cup = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Cup","startsAt":"2031-08-05T10:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=2"}"#)
            let answers: [(CalendarEvent, String)] = [
                (camp, #"{"status":"yes"}"#), (evening, #"{"status":"yes"}"#),
                (weekend, #"{"status":"yes","recurrenceId":"2031-05-25T09:00:00Z"}"#),
                (weekend, #"{"status":"yes","recurrenceId":"2031-06-01T09:00:00Z"}"#),
                (trip, #"{"status":"yes","recurrenceId":"2031-05-31T12:00:00Z"}"#),
                (league, #"{"status":"maybe","recurrenceId":"2031-04-01T18:00:00Z"}"#),
                (cup, #"{"status":"yes","recurrenceId":"2031-08-05T10:00:00Z"}"#),
            ]
            for (event, answer) in answers {
                #expect(try await api.call(.post, "\(events)/\(event.id)/rsvp", as: ada, json: answer).status == .ok)
            }
            let removed = try await api.call(
                .delete, "\(events)/\(trip.id)?recurrenceId=2031-05-31T12:00:00Z&scope=this", as: coach)
            #expect(removed.status == .noContent)
            // Moved two months later, past the end of its series; and moved two months earlier,
            // before its series starts.
            for (event, from, to) in [
                (league, "2031-04-01T18:00:00Z", "2031-06-04T18:00:00Z"),
                (cup, "2031-08-05T10:00:00Z", "2031-06-05T10:00:00Z"),
            ] {
                let moved = try await api.call(
                    .patch, "\(events)/\(event.id)?recurrenceId=\(from)", as: coach, json: #"{"startsAt":"\#(to)"}"#)
                #expect(moved.status == .ok)
            }

            let seen = try await api.window(club, "2031-06-03T00:00:00Z", "2031-06-09T00:00:00Z", as: ada)
            #expect(seen.map(\.title) == ["Trip", "Camp", "Weekend", "League", "Cup", "Trip", "Weekend"])
            #expect(
                seen.map { utc($0.startsAt) } == [
                    "2031-05-31T12:00:00Z", "2031-06-01T08:00:00Z", "2031-06-01T09:00:00Z", "2031-06-04T18:00:00Z",
                    "2031-06-05T10:00:00Z", "2031-06-07T12:00:00Z", "2031-06-08T09:00:00Z",
                ])
            #expect(seen.map(\.cancelled) == [true, false, false, false, false, false, false])
            #expect(seen.map { $0.rsvp?.status } == [.yes, .yes, .yes, .maybe, .yes, nil, nil])
            #expect(seen.map(\.attendance?.going) == [1, 1, 1, 0, 1, 0, 0])
            #expect(seen.map(\.attendance?.maybe) == [0, 0, 0, 1, 0, 0, 0])
            // The series of an instance moved in from beyond its reach is read by id, which the
            // digest of the window's versions does not cover: a change to it alone (here the
            // series cancelled, by SQL, so that no other row changes) is seen on the next read.
            try await withTestDatabase { database in
                try await database.systemQuery("UPDATE events SET cancelled_at = now() WHERE id = \(league.id)")
            }
            let again = try await api.window(club, "2031-06-03T00:00:00Z", "2031-06-09T00:00:00Z", as: ada)
            #expect(again.map(\.title) == seen.map(\.title))
            #expect(again.map(\.cancelled) == [true, false, false, true, false, false, false])
        }
    }
}
