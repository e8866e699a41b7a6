import CoreService
import Foundation
import HTTPTypes
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// A lower capacity moves the last confirmed yeses back to the waitlist; each of them hears it
/// once (through the guardian for a dependant), and nobody else does. Found by a stranger: the
/// move was silent.
@Suite struct CalendarCapacityNoticeTests {
    /// How many `event.waitlist_promoted` messages told `user` of a place at `event`.
    static func promotions(of user: UUID, at event: UUID) async throws -> Int {
        try await withTestDatabase { database in
            try await count(
                """
                SELECT count(*)::int FROM outbox WHERE message_type = 'event.waitlist_promoted'
                  AND data ->> 'userId' = \(user.lowercasedString)
                  AND data -> 'event' ->> 'eventId' = \(event.lowercasedString)
                """, in: database)
        }
    }

    /// A member who leaves, or is removed, gives up their seats, and their dependants', at what
    /// is still to come: the next in line takes each and is told. Their answers to what is over
    /// stay. Found by a probe: a former member held the only place for good, the member behind
    /// them was never promoted, and nobody could withdraw the answer.
    @Test func aMemberWhoLeavesGivesTheirSeatsToTheNextInLine() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben, cy) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                try await api.signIn("Cy")
            )
            let club = try await api.community(by: coach)
            for person in [ada, ben, cy] { try await api.join(person, club, invitedBy: coach) }
            let bea = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                .data(FamilyMember.self)
            let base = "/api/v1/communities/\(club.id)/events"
            // One place each: Ada holds the match's, Ben's Bea the practice's; Cy waits for both.
            let match = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-06T18:00:00Z","capacity":1}"#)
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-05-07T18:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=3","capacity":1}"#
            )
            let over = try await api.createEvent(
                in: club, by: coach, #"{"title":"Last season","startsAt":"2020-05-06T18:00:00Z"}"#)
            let instance = #""recurrenceId":"2031-05-14T18:00:00Z""#
            for (person, path, body) in [
                (ada, "\(base)/\(match.id)/rsvp", #"{"status":"yes"}"#),
                (cy, "\(base)/\(match.id)/rsvp", #"{"status":"yes"}"#),
                (ben, "\(base)/\(practice.id)/rsvp", #"{"status":"yes","familyMemberId":"\#(bea.id)",\#(instance)}"#),
                (cy, "\(base)/\(practice.id)/rsvp", #"{"status":"yes",\#(instance)}"#),
                (ada, "\(base)/\(over.id)/rsvp", #"{"status":"yes"}"#),
            ] {
                #expect(try await api.call(.post, path, as: person, json: body).status == .ok, "\(path)")
            }

            #expect(try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: ada).status == .noContent)
            let matchNow = try await api.call(.get, "\(base)/\(match.id)/attendance", as: coach)
                .data(EventAttendance.self)
            #expect(matchNow.responses.map(\.userId) == [cy.id] && matchNow.responses.first?.waitlisted == false)
            #expect(matchNow.counts.going == 1 && matchNow.counts.waitlisted == 0)
            let overNow = try await api.call(.get, "\(base)/\(over.id)/attendance", as: coach)
                .data(EventAttendance.self)
            #expect(overNow.responses.map(\.userId) == [ada.id])

            // Removed, Ben gives up his daughter's place.
            #expect(
                try await api.call(.delete, "/api/v1/communities/\(club.id)/members/\(ben.id)", as: coach).status
                    == .noContent)
            let practiceNow = try await api.call(
                .get, "\(base)/\(practice.id)/attendance?recurrenceId=2031-05-14T18:00:00Z", as: coach
            ).data(EventAttendance.self)
            #expect(practiceNow.responses.map(\.userId) == [cy.id] && practiceNow.responses.first?.waitlisted == false)

            // Cy hears of both places.
            #expect(try await Self.promotions(of: cy.id, at: match.id) == 1)
            #expect(try await Self.promotions(of: cy.id, at: practice.id) == 1)

            // Another member's answers, while they are one, are nobody's to withdraw.
            let withdrawn = try await withTestDatabase { database in
                try await database.transaction(userId: coach.id) { connection in
                    try await connection.query(
                        "SELECT * FROM calendar_withdraw_departed(\(club.id), \(cy.id))", logger: TestEnvironment.logger
                    ).collect().count
                }
            }
            #expect(withdrawn == 0)
            let kept = try await api.call(.get, "\(base)/\(match.id)/attendance", as: coach).data(EventAttendance.self)
            #expect(kept.responses.map(\.userId) == [cy.id])
        }
    }

    /// A family member deleted gives up the seats it held at what is still to come, as a
    /// departure does: the next in line takes each and is told, and its answers to what is
    /// over go with it (a hostile probe's: the foreign key's cascade deleted the answer and
    /// placed nobody, so an empty seat stood beside a waitlist). Nobody but its guardian
    /// withdraws its answers.
    @Test func aDeletedFamilyMembersSeatsGoToTheNextInLine() async throws {
        try await CoreHarness.run { api in
            let (coach, ben, cy) = (
                try await api.signIn("Coach"), try await api.signIn("Ben"), try await api.signIn("Cy")
            )
            let club = try await api.community(by: coach)
            for person in [ben, cy] { try await api.join(person, club, invitedBy: coach) }
            let bea = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                .data(FamilyMember.self)
            let base = "/api/v1/communities/\(club.id)/events"
            let match = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-06T18:00:00Z","capacity":1}"#)
            for (person, body) in [
                (ben, #"{"status":"yes","familyMemberId":"\#(bea.id)"}"#), (cy, #"{"status":"yes"}"#),
            ] {
                #expect(try await api.call(.post, "\(base)/\(match.id)/rsvp", as: person, json: body).status == .ok)
            }
            // Nobody else withdraws Bea's answers, not even an admin of the community.
            let withdrawn = try await withTestDatabase { database in
                try await database.transaction(userId: coach.id) { connection in
                    try await connection.query(
                        "SELECT * FROM calendar_withdraw_dependant(\(bea.id))", logger: TestEnvironment.logger
                    ).collect().count
                }
            }
            #expect(withdrawn == 0)

            #expect(try await api.call(.delete, "/api/v1/me/family-members/\(bea.id)", as: ben).status == .noContent)
            let now = try await api.call(.get, "\(base)/\(match.id)/attendance", as: coach).data(EventAttendance.self)
            #expect(now.responses.map(\.userId) == [cy.id] && now.responses.first?.waitlisted == false)
            #expect(now.counts.going == 1 && now.counts.waitlisted == 0)
            #expect(try await Self.promotions(of: cy.id, at: match.id) == 1)
        }
    }

    /// A party larger than the whole capacity is refused (`409 PARTY_TOO_LARGE`); one the capacity
    /// shrank below waits without holding up those behind it, and takes its place in answer
    /// order again once the capacity grows back (a hostile probe's: the first in line needed
    /// three of two seats, and everyone behind waited beside empty seats).
    @Test func aPartyThatCannotFitHoldsUpNobody() async throws {
        try await CoreHarness.run { api in
            let (coach, ben, cy, dee) = (
                try await api.signIn("Coach"), try await api.signIn("Ben"), try await api.signIn("Cy"),
                try await api.signIn("Dee")
            )
            let club = try await api.community(by: coach)
            for person in [ben, cy, dee] { try await api.join(person, club, invitedBy: coach) }
            let match = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-06T18:00:00Z","capacity":3}"#)
            let path = "/api/v1/communities/\(club.id)/events/\(match.id)"
            for (person, body, waits) in [
                (ben, #"{"status":"yes","plusOnes":2}"#, false), (cy, #"{"status":"yes"}"#, true),
            ] {
                let answer = try await api.call(.post, "\(path)/rsvp", as: person, json: body)
                #expect(try answer.data(EventRSVP.self).waitlisted == waits, "\(body)")
            }
            #expect(try await api.call(.patch, path, as: coach, json: #"{"capacity":2}"#).status == .ok)
            var now = try await api.call(.get, "\(path)/attendance", as: coach).data(EventAttendance.self)
            #expect(now.responses.filter { !$0.waitlisted }.map(\.userId) == [cy.id])
            #expect(now.counts.going == 1 && now.counts.seats == 1 && now.counts.waitlisted == 1)
            let tooMany = try await api.call(.post, "\(path)/rsvp", as: dee, json: #"{"status":"yes","plusOnes":2}"#)
            #expect(tooMany.status == .conflict && tooMany.errorCode == "PARTY_TOO_LARGE")
            // A no brings nobody along, whatever it says (noticed by a probe: 5 were kept).
            let no = try await api.call(.post, "\(path)/rsvp", as: dee, json: #"{"status":"no","plusOnes":5}"#)
            #expect(try no.data(EventRSVP.self).plusOnes == 0)
            let dees = try await api.call(.post, "\(path)/rsvp", as: dee, json: #"{"status":"yes","plusOnes":1}"#)
            #expect(try dees.data(EventRSVP.self).waitlisted)
            // Room for Ben's three again: he answered first, so Cy goes back to wait behind him.
            #expect(try await api.call(.patch, path, as: coach, json: #"{"capacity":3}"#).status == .ok)
            now = try await api.call(.get, "\(path)/attendance", as: coach).data(EventAttendance.self)
            #expect(now.responses.filter { !$0.waitlisted }.map(\.userId) == [ben.id])
            #expect(now.counts.seats == 3 && now.counts.waitlisted == 2)
        }
    }

    /// A seat given up at a cancelled event is nobody's news (found by a review: the next in
    /// line was told they had a place at a match that was off); and only the community, the
    /// person or the system may withdraw a former member's answers (a review: anyone could, and
    /// learn who was promoted).
    @Test func aCancelledEventPromotesNobodyAndOnlyTheCommunityWithdraws() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, cy, eve) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Cy"),
                try await api.signIn("Eve")
            )
            let club = try await api.community(by: coach)
            for person in [ada, cy] { try await api.join(person, club, invitedBy: coach) }
            let base = "/api/v1/communities/\(club.id)/events"
            let friendly = try await api.createEvent(
                in: club, by: coach, #"{"title":"Friendly","startsAt":"2031-05-08T18:00:00Z","capacity":1}"#)
            for person in [ada, cy] {
                #expect(
                    try await api.call(.post, "\(base)/\(friendly.id)/rsvp", as: person, json: #"{"status":"yes"}"#)
                        .status == .ok)
            }
            // Deleted with answers, it is cancelled; then Ada leaves.
            #expect(try await api.call(.delete, "\(base)/\(friendly.id)", as: coach).status == .noContent)
            #expect(try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: ada).status == .noContent)
            try await withTestDatabase { database in
                let told = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE message_type = 'event.waitlist_promoted'
                      AND data -> 'event' ->> 'eventId' = \(friendly.id.lowercasedString)
                    """, in: database)
                #expect(told == 0)

                // An answer of Ada's left behind (written past the API): Eve, of another
                // community, may not withdraw it; the coach may.
                let match = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-09T18:00:00Z"}"#)
                try await database.transaction(scope: .system) { connection in
                    try await connection.run(
                        """
                        INSERT INTO rsvps (event_id, user_id, status, queued_at) VALUES (\(match.id), \(ada.id), 'yes', now())
                        """, logger: TestEnvironment.logger)
                }
                func withdraw(as person: CoreHarness.Person) async throws -> Int {
                    try await database.transaction(userId: person.id) { connection in
                        try await connection.query(
                            "SELECT * FROM calendar_withdraw_departed(\(club.id), \(ada.id))",
                            logger: TestEnvironment.logger
                        ).collect().count
                    }
                }
                #expect(try await withdraw(as: eve) == 0)
                #expect(try await withdraw(as: coach) == 1)
            }
        }
    }

    /// Answers sent while their author leaves, or is removed, are withdrawn with the rest or
    /// refused (`404`): none outlives the departure holding a seat (found by a probe: one to four
    /// of four racing answers were left behind in every round).
    @Test func anAnswerRacingADepartureLeavesNothingBehind() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            var made: [UUID] = []
            for day in 1...4 {
                made.append(
                    try await api.createEvent(
                        in: club, by: coach, #"{"title":"Match","startsAt":"2031-06-0\#(day)T18:00:00Z","capacity":1}"#
                    ).id)
            }
            let events = made
            for round in 0..<6 {
                let player = try await api.signIn("Player\(round)")
                try await api.join(player, club, invitedBy: coach)
                let departure: (HTTPRequest.Method, String, CoreHarness.Person) =
                    round.isMultiple(of: 2)
                    ? (.post, "/api/v1/communities/\(club.id)/leave", player)
                    : (.delete, "/api/v1/communities/\(club.id)/members/\(player.id)", coach)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for event in events {
                        group.addTask {
                            try await Int(
                                api.call(
                                    .post, "/api/v1/communities/\(club.id)/events/\(event)/rsvp", as: player,
                                    json: #"{"status":"yes"}"#
                                ).status.code)
                        }
                    }
                    group.addTask { try await Int(api.call(departure.0, departure.1, as: departure.2).status.code) }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { [200, 204, 404].contains($0) }, "\(statuses)")
                let left = try await withTestDatabase { database in
                    try await count(
                        "SELECT count(*)::int FROM rsvps WHERE user_id = \(player.id) AND event_id = ANY(\(events))",
                        in: database)
                }
                #expect(left == 0, "round \(round): \(statuses)")
            }
        }
    }

    @Test func aLowerCapacityTellsThoseItMovedToTheWaitlist() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, ada, ben, cy) = (
                    try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                    try await api.signIn("Cy")
                )
                let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
                for person in [ada, ben, cy] { try await api.join(person, club, invitedBy: coach) }
                let bea = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                    .data(FamilyMember.self)

                // Two places: Ada and Bea have them, Cy waits. One place: Bea waits, ahead of Cy.
                let match = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-06T18:00:00+02:00","capacity":2}"#)
                let event = "/api/v1/communities/\(club.id)/events/\(match.id)"
                _ = try await api.call(.post, "\(event)/rsvp", as: ada, json: #"{"status":"yes"}"#)
                _ = try await api.call(
                    .post, "\(event)/rsvp", as: ben, json: #"{"status":"yes","familyMemberId":"\#(bea.id)"}"#)
                _ = try await api.call(.post, "\(event)/rsvp", as: cy, json: #"{"status":"yes"}"#)
                #expect(try await api.call(.patch, event, as: coach, json: #"{"capacity":1}"#).status == .ok)
                let attendance = try await api.call(.get, "\(event)/attendance", as: coach).data(EventAttendance.self)
                #expect(attendance.responses.map(\.waitlisted) == [false, true, true])

                #expect(try await harness.settled(ben, .eventChanged, count: 1))
                let told = try #require(try await harness.history(of: ben).first { $0.type == .eventChanged })
                #expect(told.title == "Bea is on the waitlist: Match")
                #expect(told.body == "Tue 6 May, 18:00 now has 1 place; you will hear if one opens up.")
                #expect(told.data["familyMemberId"] == .string(bea.id.lowercasedString))
                for person in [ada, cy, coach] {
                    #expect(try await harness.settled(person, .eventChanged, count: 0))
                }

                // A series' instance, where the organiser's own yes is the one moved: the
                // message is sent, and the organiser, who made the change, is not told.
                let series = try await api.createEvent(
                    in: club, by: coach,
                    #"{"title":"Practice","startsAt":"2031-05-07T18:00:00+02:00","recurrenceRule":"FREQ=WEEKLY;COUNT=4","capacity":2}"#
                )
                let practice = "/api/v1/communities/\(club.id)/events/\(series.id)"
                let second = #"{"status":"yes","recurrenceId":"2031-05-14T16:00:00Z"}"#
                _ = try await api.call(.post, "\(practice)/rsvp", as: ada, json: second)
                _ = try await api.call(.post, "\(practice)/rsvp", as: coach, json: second)
                #expect(try await api.call(.patch, practice, as: coach, json: #"{"capacity":1}"#).status == .ok)
                try await withTestDatabase { database in
                    let moved = try await count(
                        """
                        SELECT count(*)::int FROM outbox WHERE message_type = 'event.moved_to_waitlist'
                          AND data -> 'event' ->> 'eventId' = \(series.id.lowercasedString)
                          AND data ->> 'userId' = \(coach.id.lowercasedString)
                          AND data -> 'event' ->> 'recurrenceId' IS NOT NULL
                        """, in: database)
                    #expect(moved == 1)
                }
                #expect(try await harness.settled(coach, .eventChanged, count: 0))
                #expect(try await harness.settled(ada, .eventChanged, count: 0))
            }
        }
    }
}
