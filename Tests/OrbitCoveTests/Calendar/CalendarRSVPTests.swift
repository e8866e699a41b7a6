import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization
import Testing

/// Answers for members and their dependants, capacities with waitlists, deadlines,
/// cancellations, permissions, and what the calendar tells the other services.
@Suite struct CalendarRSVPTests {
    /// Capacity 3 seats: Ada (with a guest) and Ben fill it, Cy and Ben's daughter wait in
    /// answer order; when Ada drops out both are promoted in that order (and told through the
    /// outbox). Asking for more seats goes to the back of the line. Each person answers once
    /// per instance.
    @Test func yesesPastTheCapacityWaitAndTheFirstInLineIsPromoted() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben, cy) = (try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Cy"))
            let club = try await api.community(by: coach)
            for person in [ada, ben, cy] { try await api.join(person, club, invitedBy: coach) }
            let daughter = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                .data(FamilyMember.self)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":3}"#)
            let rsvp = "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp"

            let adaYes = try await api.call(.post, rsvp, as: ada, json: #"{"status":"yes","plusOnes":1}"#)
            let adaAnswer = try adaYes.data(EventRSVP.self)
            #expect(adaYes.status == .ok && !adaAnswer.waitlisted)
            let benYes = try await api.call(.post, rsvp, as: ben, json: #"{"status":"yes","note":"Bringing cones"}"#)
            let benAnswer = try benYes.data(EventRSVP.self)
            #expect(!benAnswer.waitlisted)
            let cyYes = try await api.call(.post, rsvp, as: cy, json: #"{"status":"yes"}"#)
            #expect(try cyYes.data(EventRSVP.self).waitlisted)
            let beaYes = try await api.call(
                .post, rsvp, as: ben, json: #"{"status":"yes","familyMemberId":"\#(daughter.id)"}"#)
            #expect(try beaYes.data(EventRSVP.self).waitlisted)
            // Someone else's dependant is not yours to answer for.
            let stranger = try await api.call(
                .post, rsvp, as: cy, json: #"{"status":"yes","familyMemberId":"\#(daughter.id)"}"#)
            #expect(stranger.status == .notFound && stranger.errorCode == "FAMILY_MEMBER_NOT_FOUND")

            var attendance = try await api.call(
                .get, "/api/v1/communities/\(club.id)/events/\(event.id)/attendance", as: coach
            ).data(EventAttendance.self)
            #expect(attendance.counts.going == 2 && attendance.counts.seats == 3 && attendance.counts.waitlisted == 2)
            #expect(attendance.responses.map(\.displayName) == ["Ada", "Ben", "Cy", "Ben"])
            #expect(
                attendance.responses[3].familyMemberName == "Bea" && attendance.responses[1].note == "Bringing cones")

            // Answering again changes the answer, it does not add one.
            #expect(try await api.call(.post, rsvp, as: ada, json: #"{"status":"no"}"#).status == .ok)
            attendance = try await api.call(
                .get, "/api/v1/communities/\(club.id)/events/\(event.id)/attendance", as: coach
            ).data(EventAttendance.self)
            #expect(attendance.responses.count == 4 && attendance.counts.declined == 1)
            #expect(attendance.counts.going == 3 && attendance.counts.waitlisted == 0)
            #expect(attendance.responses.prefix(3).map(\.displayName) == ["Ben", "Cy", "Ben"])

            try await withTestDatabase { database in
                let promoted = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE message_type = 'event.waitlist_promoted'
                      AND data -> 'event' ->> 'eventId' = \(event.id.lowercasedString)
                      AND (data ->> 'userId' = \(cy.id.lowercasedString)
                           OR data ->> 'familyMemberId' = \(daughter.id.lowercasedString))
                    """, in: database)
                #expect(promoted == 2)
            }

            // Cy now wants a seat for a friend too: that is a new place in line, behind Bea.
            let more = try await api.call(.post, rsvp, as: cy, json: #"{"status":"yes","plusOnes":1}"#)
            let moreAnswer = try more.data(EventRSVP.self)
            #expect(moreAnswer.waitlisted)
            // A bigger capacity gives Cy a place, and Cy hears of it.
            let bigger = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach, json: #"{"capacity":5}"#)
            #expect(bigger.status == .ok)
            #expect(try await CalendarCapacityNoticeTests.promotions(of: cy.id, at: event.id) == 2)
            _ = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach, json: #"{"capacity":3}"#)

            // The window read carries each caller's own answers and the counts.
            let seen = try await api.window(club, "2031-05-01T00:00:00Z", "2031-05-02T00:00:00Z", as: ben)
            #expect(seen.count == 1 && seen[0].rsvp?.status == .yes && seen[0].dependantRsvps.count == 1)
            #expect(seen[0].dependantRsvps.first?.waitlisted == false)
            #expect(seen[0].attendance?.capacity == 3 && seen[0].attendance?.going == 2)
            #expect(seen[0].attendance?.seats == 2 && seen[0].attendance?.waitlisted == 1)
        }
    }

    /// Answers racing the event's removal (found by a hostile probe: in 3 of 8 rounds an
    /// answer was told 200 and the event was deleted under it; with answers already there, the
    /// cancellation's notice left out some who answered meanwhile). Whatever the order, an
    /// answer that was accepted is kept, the event is then cancelled rather than deleted, and
    /// its notice names everyone who said yes.
    @Test func anAnswerRacingTheEventsRemovalIsKeptAndToldOrRefused() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            var members: [CoreHarness.Person] = []
            for name in ["Ada", "Ben", "Cy", "Di"] {
                let person = try await api.signIn(name)
                try await api.join(person, club, invitedBy: coach)
                members.append(person)
            }
            for round in 0..<6 {
                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Race \#(round)","startsAt":"2031-05-01T15:00:00Z"}"#)
                let path = "/api/v1/communities/\(club.id)/events/\(event.id)"
                let accepted = try await withThrowingTaskGroup(of: UUID?.self) { group in
                    for (index, member) in members.enumerated() {
                        group.addTask {
                            try await Task.sleep(for: .milliseconds(3 * index))
                            let reply = try await api.call(
                                .post, path + "/rsvp", as: member, json: #"{"status":"yes"}"#)
                            return reply.status == .ok ? member.id : nil
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(4))
                        let removed = try await api.call(.delete, path, as: coach)
                        #expect(removed.status == .noContent, "\(removed.status)")
                        return nil
                    }
                    var accepted: Set<UUID> = []
                    for try await id in group { if let id { accepted.insert(id) } }
                    return accepted
                }
                let (deleted, answered, told) = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) {
                    owner in
                    let deleted = try await count(
                        "SELECT count(*)::int FROM events WHERE id = \(event.id) AND deleted_at IS NOT NULL",
                        in: owner)
                    var answered: Set<UUID> = []
                    for try await id in try await owner.client.query(
                        "SELECT user_id FROM rsvps WHERE event_id = \(event.id) AND status = 'yes'",
                        logger: TestEnvironment.logger
                    ).decode(UUID.self) {
                        answered.insert(id)
                    }
                    var told: Set<UUID> = []
                    for try await id in try await owner.client.query(
                        """
                        SELECT jsonb_array_elements_text(data -> 'answeredUserIds')::uuid FROM outbox
                        WHERE queue = 'notifications' AND message_type = 'event.updated'
                          AND data -> 'event' ->> 'eventId' = \(event.id.lowercasedString)
                        """, logger: TestEnvironment.logger
                    ).decode(UUID.self) {
                        told.insert(id)
                    }
                    return (deleted, answered, told)
                }
                #expect(answered == accepted, "round \(round): accepted \(accepted), kept \(answered)")
                #expect(deleted == (accepted.isEmpty ? 1 : 0), "round \(round): \(accepted.count) accepted")
                #expect(told == accepted, "round \(round): told \(told), accepted \(accepted)")
            }
            // What the answer holds the event with serves only the event's community.
            let stranger = try await api.signIn("Eve")
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Not Eve's","startsAt":"2031-05-01T15:00:00Z"}"#)
            for (person, rows) in [(stranger, 0), (members[0], 1)] {
                let held = try await withTestDatabase { database in
                    try await database.transaction(userId: person.id) { connection in
                        var held = -1
                        for try await value in try await connection.query(
                            "SELECT rows_now FROM calendar_hold_event(\(event.id), NULL)",
                            logger: TestEnvironment.logger
                        ).decode(Int.self) {
                            held = value
                        }
                        return held
                    }
                }
                #expect(held == rows, "\(person.id)")
            }
        }
    }

    /// An answer to an overridden instance holds the series' row before the override's
    /// (`calendar_hold_event`, migration 0062), as every writer takes them: the series' removal
    /// locks the series' row and then deletes the overrides, and an answer that held the
    /// override while waiting for the series deadlocked with it. Here the series' row is held,
    /// an answer's hold waits for it, and the override must still be free.
    @Test func anInstancesHoldTakesTheSeriesRowFirst() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Training","startsAt":"2031-05-01T15:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=4"}"#)
            let second = "2031-05-08T15:00:00.000Z"
            let moved = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(series.id)?recurrenceId=\(second)&scope=this",
                as: coach, json: #"{"title":"Moved"}"#)
            #expect(moved.status == .ok)
            // The series edited after its override: its row's new version is stored after the
            // override's, so a read in storage order meets the override first.
            let renamed = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(series.id)", as: coach,
                json: #"{"title":"Training!"}"#)
            #expect(renamed.status == .ok)
            let start = try #require(JSONCoding.parseTimestamp(second))
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                let override = try await owner.systemQuery(
                    "SELECT id FROM events WHERE recurrence_parent_id = \(series.id) AND deleted_at IS NULL")
                let overrideId = try #require(try override.first?.decode(UUID.self))
                let release = AtomicFlag()
                let holderId = Mutex<String?>(nil)
                // The series' row, held as its removal holds it, by a transaction whose id the
                // answer's wait names in pg_locks (which, unlike pg_stat_activity, shows every
                // role's sessions).
                let holder = Task {
                    try await owner.transaction(scope: .system) { connection in
                        try await connection.run(
                            "SELECT 1 FROM events WHERE id = \(series.id) FOR UPDATE", logger: TestEnvironment.logger)
                        for try await id in try await connection.query(
                            "SELECT pg_current_xact_id()::text", logger: TestEnvironment.logger
                        ).decode(String.self) {
                            holderId.withLock { $0 = id }
                        }
                        while !release.isSet { try await Task.sleep(for: .milliseconds(20)) }
                    }
                }
                #expect(try await eventually { holderId.withLock { $0 } != nil })
                let held = try #require(holderId.withLock { $0 })
                // The answer's hold waits for it (its own backend, by pid: another session waiting
                // on the series row would otherwise pass for it, and the check below would then
                // run before the hold had taken anything)...
                let answerPid = Mutex<Int32?>(nil)
                let answer = Task {
                    try await withTestDatabase { database in
                        try await database.transaction(userId: ada.id) { connection in
                            for try await pid in try await connection.query(
                                "SELECT pg_backend_pid()", logger: TestEnvironment.logger
                            ).decode(Int32.self) {
                                answerPid.withLock { $0 = pid }
                            }
                            try await connection.run(
                                "SELECT * FROM calendar_hold_event(\(series.id), \(start)::timestamptz)",
                                logger: TestEnvironment.logger)
                        }
                    }
                }
                #expect(
                    try await eventually {
                        guard let pid = answerPid.withLock({ $0 }) else { return false }
                        return try await !owner.systemQuery(
                            """
                            SELECT 1 FROM pg_locks
                            WHERE pid = \(pid) AND locktype = 'transactionid' AND transactionid::text = \(held)
                              AND NOT granted
                            """
                        ).isEmpty
                    })
                // ...and has not taken the override meanwhile.
                await #expect(throws: Never.self) {
                    try await owner.transaction(scope: .system) { connection in
                        try await connection.run(
                            "SELECT 1 FROM events WHERE id = \(overrideId) FOR UPDATE NOWAIT",
                            logger: TestEnvironment.logger)
                    }
                }
                release.set()
                try await holder.value
                try await answer.value
            }
        }
    }

    /// A dependant deleted while an answer for them waits on the event: the answer's own check
    /// of the dependant passed before, and the write is refused by the wall (the dependant is
    /// no longer the guardian's) or by the key. Either is `404 FAMILY_MEMBER_NOT_FOUND`; a
    /// hostile probe got `500` fifteen times in fifteen from the wall's refusal.
    @Test func aDependantDeletedWhileTheirAnswerWaitsIsNotFound() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ben = try await api.signIn("Ben")
            let club = try await api.community(by: coach)
            try await api.join(ben, club, invitedBy: coach)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z"}"#)
            let daughter = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                .data(FamilyMember.self)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                let holder = try await HeldTransaction.start(
                    "SELECT 1 FROM events WHERE id = \(event.id) FOR UPDATE", on: owner)
                let answer = Task {
                    try await api.call(
                        .post, "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp", as: ben,
                        json: #"{"status":"yes","familyMemberId":"\#(daughter.id)"}"#)
                }
                // The answer, the only other session here, waits on the event's row...
                #expect(try await eventually { try await holder.isWaitedOn() })
                // ...while the dependant goes.
                try await owner.systemQuery("DELETE FROM family_members WHERE id = \(daughter.id)")
                await holder.end()
                let reply = try await answer.value
                #expect(reply.status == .notFound && reply.errorCode == "FAMILY_MEMBER_NOT_FOUND", "\(reply.status)")
            }
        }
    }

    /// An answer's statement writes its messages itself (`AnswerStatement`), completing the
    /// payload with what only the statement knows: `event.waitlist_promoted` for the answer it
    /// gave a place, the payload the notifications service decodes, with who was promoted, from
    /// the answerer, with the request's trace. The answers themselves announce nothing (nobody
    /// consumed `event.rsvp_changed`; migration 0065).
    @Test func theMessagesAnAnswerWritesAreItsPayloads() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: coach)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let daughter = try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"Bea"}"#)
                .data(FamilyMember.self)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":1}"#)
            let rsvp = "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp"
            #expect(try await api.call(.post, rsvp, as: ada, json: #"{"status":"yes"}"#).status == .ok)
            let waiting = try await api.call(
                .post, rsvp, as: ben, json: #"{"status":"yes","familyMemberId":"\#(daughter.id)"}"#)
            #expect(try waiting.data(EventRSVP.self).waitlisted)
            #expect(try await api.call(.post, rsvp, as: ada, json: #"{"status":"no"}"#).status == .ok)

            let rows = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                var rows: [(type: String, actor: UUID?, trace: String?, data: String)] = []
                for try await row in try await owner.client.query(
                    """
                    SELECT message_type, actor_id, traceparent, data::text FROM outbox
                    WHERE message_type IN ('event.rsvp_changed', 'event.waitlist_promoted')
                      AND data -> 'event' ->> 'eventId' = \(event.id.lowercasedString)
                    ORDER BY seq
                    """, logger: TestEnvironment.logger
                ).decode((String, UUID?, String?, String).self) {
                    rows.append((row.0, row.1, row.2, row.3))
                }
                return rows
            }
            #expect(rows.map(\.type) == ["event.waitlist_promoted"])
            #expect(rows.map(\.actor) == [ada.id])
            #expect(rows.allSatisfy { $0.trace?.hasPrefix("00-") == true }, "\(rows.map(\.trace))")
            guard let promoted = rows.first else { return }
            let message = try JSONCoding.decoder.decode(EventWaitlistPromoted.self, from: Data(promoted.data.utf8))
            #expect(message.event.eventId == event.id && message.event.title == "Match")
            #expect(
                message
                    == EventWaitlistPromoted(
                        communityId: club.id, communityName: club.name, event: message.event, userId: ben.id,
                        familyMemberId: daughter.id))
        }
    }

    /// An answer is placed only on the event as it was read: `calendar_answer` takes the
    /// instance's lock and refuses (serialization_failure, which the store answers by reading
    /// again) when the event's rows changed since, so a cancellation or a new deadline that
    /// committed in between is never answered past.
    @Test func anAnswerIsPlacedOnlyOnTheEventAsItWasRead() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":3}"#)
            try await withTestDatabase { database in
                let sequence = try await count(
                    "SELECT sequence FROM events WHERE id = \(event.id)", in: database)
                func answer(seen: Int) async throws -> Int {
                    try await database.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            """
                            SELECT * FROM calendar_answer(\(event.id), NULL, \(ada.id), NULL, 'yes', 0, NULL, 1, \(seen)::bigint)
                            """, logger: TestEnvironment.logger
                        ).collect().count
                    }
                }
                await #expect {
                    _ = try await answer(seen: sequence - 1)
                } throws: { error in
                    (error as? PSQLError)?.serverInfo?[.sqlState] == "40001"
                }
                let answered = try await answer(seen: sequence)
                #expect(answered == 1)
            }
            // Through the API the answer is made on the event as it is now.
            let edited = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach, json: #"{"title":"Final"}"#)
            #expect(edited.status == .ok)
            let rsvp = try await api.call(
                .post, "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp", as: ada, json: #"{"status":"no"}"#)
            #expect(rsvp.status == .ok)
        }
    }

    /// An answer while the event is edited again and again (an organiser fixing its title)
    /// is made: each edit makes the answer read the event again, and a hostile probe saw the
    /// third such read give up as `503 SERVICE_UNAVAILABLE`, to one answer in three against
    /// five edits at once (here, two runs in three failed).
    @Test func anAnswerDuringABurstOfEditsIsMade() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            var statuses: [Int] = []
            for round in 0..<6 {
                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":5}"#)
                let base = "/api/v1/communities/\(club.id)/events/\(event.id)"
                statuses += try await withThrowingTaskGroup(of: Int?.self) { group in
                    group.addTask {
                        Int(try await api.call(.post, "\(base)/rsvp", as: ada, json: #"{"status":"yes"}"#).status.code)
                    }
                    // One edit fewer than the answer's attempts (six): each costs it one at most.
                    for edit in 0..<5 {
                        group.addTask {
                            _ = try await api.call(
                                .patch, base, as: coach, json: #"{"title":"Match \#(round).\#(edit)"}"#)
                            return nil
                        }
                    }
                    return try await group.reduce(into: []) { if let status = $1 { $0.append(status) } }
                }
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        }
    }

    /// An instance's counts follow each answer by what it changed (migration 0026): after many
    /// answers changed back and forth, with guests and a waitlist moving, they equal a count of
    /// the answers as they stand.
    @Test func anInstancesCountsFollowEveryAnswer() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            var people = [coach]
            for name in ["Ada", "Ben", "Cy", "Dee"] {
                let person = try await api.signIn(name)
                try await api.join(person, club, invitedBy: coach)
                people.append(person)
            }
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":3}"#)
            var generator = SplitMix64(seed: 2026)
            for _ in 0..<40 {
                let person = people[Int(generator.next() % UInt64(people.count))]
                let status = ["yes", "yes", "no", "maybe"][Int(generator.next() % 4)]
                let guests = Int(generator.next() % 3)
                let answered = try await api.call(
                    .post, "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp", as: person,
                    json: #"{"status":"\#(status)","plusOnes":\#(guests)}"#)
                #expect(answered.status == .ok)
            }
            try await withTestDatabase { database in
                let rows = try await database.systemQuery(
                    """
                    SELECT (c.going, c.seats, c.maybe, c.declined, c.waitlisted)::text,
                           (SELECT (count(*) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted),
                                    coalesce(sum(1 + r.plus_ones) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted), 0),
                                    count(*) FILTER (WHERE r.status = 'maybe'), count(*) FILTER (WHERE r.status = 'no'),
                                    count(*) FILTER (WHERE r.waitlisted))::text
                            FROM rsvps r WHERE r.event_id = c.event_id AND r.recurrence_id IS NULL)
                    FROM event_instance_counts c WHERE c.event_id = \(event.id)
                    """)
                let (kept, counted) = try #require(rows.first).decode((String, String).self)
                #expect(kept == counted)
            }
        }
    }

    /// A parent's answers and their children's come back with each instance of the window, the
    /// children's in the order they were given, whatever their ids.
    @Test func aParentSeesTheirChildrensAnswersInTheOrderGiven() async throws {
        try await CoreHarness.run { api in
            let (coach, ben) = (try await api.signIn("Coach"), try await api.signIn("Ben"))
            let club = try await api.community(by: coach)
            try await api.join(ben, club, invitedBy: coach)
            var children: [FamilyMember] = []
            for name in ["Bea", "Bo", "Cal"] {
                children.append(
                    try await api.call(.post, "/api/v1/me/family-members", as: ben, json: #"{"name":"\#(name)"}"#)
                        .data(FamilyMember.self))
            }
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-05-06T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=3"}"#)
            let rsvp = "/api/v1/communities/\(club.id)/events/\(practice.id)/rsvp"
            // The second instance, answered child by child in an order unlike their ids'.
            let order = children.sorted { $0.id.uuidString > $1.id.uuidString }
            for child in order {
                let answer = try await api.call(
                    .post, rsvp, as: ben,
                    json: #"{"status":"yes","recurrenceId":"2031-05-13T16:00:00Z","familyMemberId":"\#(child.id)"}"#)
                #expect(answer.status == .ok)
            }
            _ = try await api.call(
                .post, rsvp, as: ben, json: #"{"status":"maybe","recurrenceId":"2031-05-13T16:00:00Z"}"#)
            let seen = try await api.window(club, "2031-05-01T00:00:00Z", "2031-06-01T00:00:00Z", as: ben)
            #expect(seen.count == 3)
            #expect(seen.map { $0.dependantRsvps.count } == [0, 3, 0])
            #expect(seen[1].dependantRsvps.map(\.familyMemberId) == order.map(\.id))
            #expect(seen[1].rsvp?.status == .maybe && seen[0].rsvp == nil && seen[2].rsvp == nil)
            #expect(seen[1].attendance?.going == 3 && seen[1].attendance?.maybe == 1)
        }
    }

    /// Each instance of a series is answered on its own; the deadline keeps its distance from
    /// every instance's start, and after it answers are closed with 409 RSVP_CLOSED.
    @Test func instancesAreAnsweredApartAndDeadlinesClose() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let day: TimeInterval = 86_400
            let first = Date(timeIntervalSinceNow: 2 * day).rounded
            // Answers close a day and a half before each instance: the first instance is closed
            // in 12 hours, the second in a week and 12 hours.
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"\#(utc(first))","rsvpDeadline":"\#(utc(first.addingTimeInterval(-1.5 * day)))","recurrenceRule":"FREQ=WEEKLY;COUNT=3"}"#
            )
            let rsvp = "/api/v1/communities/\(club.id)/events/\(series.id)/rsvp"
            let missing = try await api.call(.post, rsvp, as: ada, json: #"{"status":"yes"}"#)
            #expect(missing.status == .badRequest && missing.fieldErrors["recurrenceId"] != nil)
            let notAnInstance = try await api.call(
                .post, rsvp, as: ada,
                json: #"{"status":"yes","recurrenceId":"\#(utc(first.addingTimeInterval(3600)))"}"#)
            #expect(notAnInstance.status == .notFound && notAnInstance.errorCode == "INSTANCE_NOT_FOUND")
            for week in 0..<2 {
                let instance = utc(first.addingTimeInterval(Double(week) * 7 * day))
                let reply = try await api.call(
                    .post, rsvp, as: ada, json: #"{"status":"yes","recurrenceId":"\#(instance)"}"#)
                #expect(reply.status == .ok)
            }
            let instances = try await api.window(
                club, utc(first.addingTimeInterval(-day)), utc(first.addingTimeInterval(20 * day)), as: ada)
            #expect(instances.map { $0.rsvp?.status } == [.yes, .yes, nil])

            let closed = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Trip","startsAt":"\#(utc(first))","rsvpDeadline":"\#(utc(Date(timeIntervalSinceNow: -60)))"}"#
            )
            let late = try await api.call(
                .post, "/api/v1/communities/\(club.id)/events/\(closed.id)/rsvp", as: ada, json: #"{"status":"yes"}"#)
            #expect(late.status == .conflict && late.errorCode == "RSVP_CLOSED")
        }
    }

    /// Deleting an event someone said they would come to cancels it: they still see it,
    /// cancelled (and hear of it); others do not. One nobody answered is simply gone.
    @Test func cancelledEventsStayVisibleToThoseWhoAnswered() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: coach)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let party = try await api.createEvent(
                in: club, by: coach, #"{"title":"Party","startsAt":"2031-06-01T18:00:00Z"}"#)
            let quiet = try await api.createEvent(
                in: club, by: coach, #"{"title":"Quiet","startsAt":"2031-06-01T12:00:00Z"}"#)
            let events = "/api/v1/communities/\(club.id)/events"
            #expect(
                try await api.call(.post, "\(events)/\(party.id)/rsvp", as: ada, json: #"{"status":"maybe"}"#).status
                    == .ok)
            #expect(try await api.call(.delete, "\(events)/\(party.id)", as: coach).status == .noContent)
            #expect(try await api.call(.delete, "\(events)/\(quiet.id)", as: coach).status == .noContent)

            let (from, to) = ("2031-06-01T00:00:00Z", "2031-06-02T00:00:00Z")
            let adaSees = try await api.window(club, from, to, as: ada)
            #expect(adaSees.map(\.title) == ["Party"] && adaSees[0].cancelled)
            #expect(try await api.window(club, from, to, as: ben).isEmpty)
            #expect(try await api.call(.get, "\(events)/\(quiet.id)", as: coach).status == .notFound)
            let again = try await api.call(.post, "\(events)/\(party.id)/rsvp", as: ada, json: #"{"status":"yes"}"#)
            #expect(again.status == .conflict && again.errorCode == "EVENT_CANCELLED")
            try await withTestDatabase { database in
                let told = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE queue = 'notifications' AND message_type = 'event.updated'
                      AND data -> 'event' ->> 'eventId' = \(party.id.lowercasedString)
                      AND data -> 'changes' ? 'cancelled' AND data -> 'answeredUserIds' ? \(ada.id.lowercasedString)
                    """, in: database)
                #expect(told == 1)
            }
        }
    }

    /// Removing one instance of a series someone said they would come to: they still see it,
    /// cancelled, in the window as in `GET`; others do not see it.
    @Test func aRemovedInstanceStaysVisibleAsCancelledToThoseWhoAnswered() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: coach)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-06-03T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=3"}"#)
            let path = "/api/v1/communities/\(club.id)/events/\(practice.id)"
            let second = "recurrenceId=2031-06-10T16:00:00Z"
            #expect(
                try await api.call(
                    .post, "\(path)/rsvp", as: ada, json: #"{"status":"yes","recurrenceId":"2031-06-10T16:00:00Z"}"#
                ).status == .ok)
            #expect(try await api.call(.delete, "\(path)?\(second)&scope=this", as: coach).status == .noContent)

            let (from, to) = ("2031-06-01T00:00:00Z", "2031-07-01T00:00:00Z")
            let adaSees = try await api.window(club, from, to, as: ada)
            #expect(
                adaSees.map { utc($0.startsAt) } == [
                    "2031-06-03T16:00:00Z", "2031-06-10T16:00:00Z", "2031-06-17T16:00:00Z",
                ])
            #expect(adaSees.map(\.cancelled) == [false, true, false])
            #expect(adaSees[1].rsvp?.status == .yes)
            let one = try await api.call(.get, "\(path)?\(second)", as: ada).data(CalendarEvent.self)
            #expect(one.cancelled && one.recurrenceId == adaSees[1].recurrenceId)
            #expect(try await api.window(club, from, to, as: ben).map(\.cancelled) == [false, false])
        }
    }

    /// The seed's matrix: members create events while the community allows it, edit their
    /// own, not others'; admins edit any; outsiders see nothing.
    @Test func theMatrixDecidesWhoWritesEvents() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let (ada, ben, eve) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve")
            )
            let club = try await api.community(by: coach)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let events = "/api/v1/communities/\(club.id)/events"
            let adas = try await api.createEvent(
                in: club, by: ada, #"{"title":"Carpool","startsAt":"2031-01-01T08:00:00Z"}"#)
            let rename = #"{"title":"Renamed"}"#
            #expect(try await api.call(.patch, "\(events)/\(adas.id)", as: ben, json: rename).status == .forbidden)
            #expect(try await api.call(.delete, "\(events)/\(adas.id)", as: ben).status == .forbidden)
            #expect(try await api.call(.patch, "\(events)/\(adas.id)", as: ada, json: rename).status == .ok)
            #expect(
                try await api.call(.patch, "\(events)/\(adas.id)", as: coach, json: #"{"title":"Mine now"}"#).status
                    == .ok)
            #expect(try await api.call(.get, "\(events)/\(adas.id)", as: eve).status == .notFound)
            #expect(
                try await api.call(.get, "\(events)?from=2031-01-01T00:00:00Z&to=2031-01-02T00:00:00Z", as: eve).status
                    == .notFound)
            _ = try await api.call(
                .patch, "/api/v1/communities/\(club.id)", as: coach, json: #"{"settings":{"allowMemberEvents":false}}"#)
            let refused = try await api.call(
                .post, events, as: ada, json: #"{"title":"Nope","startsAt":"2031-01-01T08:00:00Z"}"#)
            #expect(refused.status == .forbidden)
            // A PATCH that touched nothing changes nothing (and says nothing).
            let sequence = try await api.call(.get, "\(events)/\(adas.id)", as: coach).data(CalendarEvent.self).sequence
            #expect(
                try await api.call(.patch, "\(events)/\(adas.id)", as: coach, json: #"{"title":"Mine now"}"#).status
                    == .ok)
            #expect(
                try await api.call(.get, "\(events)/\(adas.id)", as: coach).data(CalendarEvent.self).sequence
                    == sequence)
        }
    }

    /// `event.created` and `event.updated` carry what the notifications and reminders services
    /// need; events (series and overrides) are in sync.
    @Test func messagesAndSyncCarryEvents() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            try await api.join(ada, club, invitedBy: coach)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-03-04T18:00:00+01:00","recurrenceRule":"FREQ=WEEKLY;COUNT=4","capacity":12}"#
            )
            let second = series.startsAt.addingTimeInterval(7 * 86_400)
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            _ = try await api.call(
                .post, "\(path)/rsvp", as: ada, json: #"{"status":"yes","recurrenceId":"\#(utc(second))"}"#)
            let moved = try await api.call(
                .patch, "\(path)?recurrenceId=\(utc(second))", as: coach,
                json: #"{"locationName":"Gym","startsAt":"2031-03-11T17:00:00+01:00"}"#)
            #expect(moved.status == .ok)
            try await withTestDatabase { database in
                let created = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE queue = 'notifications' AND message_type = 'event.created'
                      AND data -> 'event' ->> 'eventId' = \(series.id.lowercasedString)
                      AND data -> 'event' ->> 'recurrenceRule' = 'FREQ=WEEKLY;COUNT=4'
                      AND data -> 'event' ->> 'timeZone' = 'Europe/Berlin' AND (data ->> 'rsvpRequested')::boolean
                    """, in: database)
                let updated = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE queue = 'notifications' AND message_type = 'event.updated'
                      AND data -> 'event' ->> 'eventId' = \(series.id.lowercasedString)
                      AND data ->> 'scope' = 'this' AND data -> 'changes' ?& array['place', 'time']
                      AND data -> 'event' ->> 'recurrenceId' IS NOT NULL
                      AND data -> 'answeredUserIds' ? \(ada.id.lowercasedString)
                    """, in: database)
                #expect(created == 1 && updated == 1)
            }
            let sync = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: ada)
            let events = try #require((sync.json?["data"] as? [String: Any])?["events"] as? [String: Any])
            let rows = try #require(events["created"] as? [[String: Any]])
            #expect(rows.count == 2)
            #expect(rows.contains { $0["recurrenceParentId"] as? String == series.id.lowercasedString })
        }
    }

    /// A split racing a move of the whole series never strands the answers: the split is of an
    /// instance the series has once the lock is had, or it is `404` (a hostile probe's: a split
    /// of the instance as it was before the move took the moved answers onto a new series whose
    /// instances they no longer matched, in four of eight tries).
    @Test func aSplitRacingAMoveKeepsTheAnswers() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            try await api.join(ada, club, invitedBy: coach)
            // A month each, so no trial sees another's instances.
            for month in 1...8 {
                let day = "2031-0\(month)-05"
                let series = try await api.createEvent(
                    in: club, by: coach,
                    #"{"title":"Practice","startsAt":"\#(day)T10:00:00Z","recurrenceRule":"FREQ=DAILY;COUNT=10"}"#)
                let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
                let (fifth, seventh) = (series.startsAt + 4 * 86_400, series.startsAt + 6 * 86_400)
                _ = try await api.call(
                    .post, "\(path)/rsvp", as: ada, json: #"{"status":"yes","recurrenceId":"\#(utc(seventh))"}"#)
                async let split = api.call(
                    .patch, "\(path)?recurrenceId=\(utc(fifth))&scope=following", as: coach,
                    json: #"{"title":"Later"}"#)
                async let move = api.call(.patch, path, as: coach, json: #"{"startsAt":"\#(day)T11:00:00Z"}"#)
                let (splitReply, moveReply) = try await (split, move)
                #expect(moveReply.status == .ok)
                #expect(
                    splitReply.status == .ok || splitReply.errorCode == "INSTANCE_NOT_FOUND", "\(splitReply.status)")
                let window = try await api.window(
                    club, "2031-0\(month)-01T00:00:00Z", "2031-0\(month)-28T00:00:00Z", as: ada)
                let answered = window.filter { $0.rsvp?.status == .yes }
                #expect(answered.count == 1, "month \(month): \(answered.count) instances show the yes")
            }
        }
    }

    /// Two splits of one series at once: the later one to take the lock splits a series that may
    /// no longer have its instance, and hears `404`, never that its start is wrong (a hostile
    /// probe's: `422 UNSUPPORTED_RECURRENCE` about a `startsAt` neither request sent).
    @Test func twoSplitsAtOnceEndInASplitOrA404() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            for trial in 0..<6 {
                let series = try await api.createEvent(
                    in: club, by: coach,
                    #"{"title":"Practice \#(trial)","startsAt":"2031-04-03T10:00:00+02:00","recurrenceRule":"FREQ=DAILY;COUNT=10"}"#
                )
                let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
                let (fourth, fifth) = (series.startsAt + 3 * 86_400, series.startsAt + 4 * 86_400)
                async let first = api.call(
                    .patch, "\(path)?recurrenceId=\(utc(fourth))&scope=following", as: coach, json: #"{"title":"R0"}"#)
                async let second = api.call(
                    .patch, "\(path)?recurrenceId=\(utc(fifth))&scope=following", as: coach, json: #"{"title":"R1"}"#)
                for reply in try await [first, second] {
                    #expect(
                        reply.status == .ok || reply.errorCode == "INSTANCE_NOT_FOUND",
                        "\(reply.status) \(reply.errorCode ?? "") \(reply.fieldErrors)")
                }
            }
        }
    }

    /// A moved instance's deadline keeps its distance from the instance's new start, as every
    /// instance's does, and follows the series' when that changes (a hostile probe's: moving an
    /// instance earlier than its old deadline was refused, later kept the old deadline).
    @Test func aMovedInstanceKeepsItsDeadlinesDistance() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-06-01T18:00:00+02:00","recurrenceRule":"FREQ=DAILY;COUNT=10","rsvpDeadline":"2031-05-31T18:00:00+02:00"}"#
            )
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            let fifth = series.startsAt.addingTimeInterval(4 * 86_400)
            let earlier = try await api.call(
                .patch, "\(path)?recurrenceId=\(utc(fifth))&scope=this", as: coach,
                json: #"{"startsAt":"2031-06-02T08:00:00+02:00"}"#)
            #expect(earlier.status == .ok, "\(earlier.status) \(earlier.fieldErrors)")
            let moved = try earlier.data(CalendarEvent.self)
            #expect(moved.rsvpDeadline == moved.startsAt.addingTimeInterval(-86_400))
            // The series' deadline moves to two days before: the moved instance's follows.
            let twoDays = try await api.call(
                .patch, path, as: coach, json: #"{"rsvpDeadline":"2031-05-30T18:00:00+02:00"}"#)
            #expect(twoDays.status == .ok)
            let after = try await api.call(.get, "\(path)?recurrenceId=\(utc(fifth))", as: coach)
                .data(CalendarEvent.self)
            #expect(
                after.startsAt == moved.startsAt && after.rsvpDeadline == moved.startsAt.addingTimeInterval(-2 * 86_400)
            )

            // The whole series a day earlier, and the rest from the eighth an hour later: every
            // instance's deadline stays two days before it (a hostile probe's: the series'
            // deadline stayed put, so a move earlier was refused and one later widened it).
            let dayEarlier = try await api.call(
                .patch, path, as: coach, json: #"{"startsAt":"2031-05-31T18:00:00+02:00"}"#)
            #expect(dayEarlier.status == .ok, "\(dayEarlier.status) \(dayEarlier.fieldErrors)")
            let first = try dayEarlier.data(CalendarEvent.self)
            #expect(first.rsvpDeadline == first.startsAt.addingTimeInterval(-2 * 86_400))
            let eighth = first.startsAt + 7 * 86_400
            let later = try await api.call(
                .patch, "\(path)?recurrenceId=\(utc(eighth))&scope=following", as: coach,
                json: #"{"startsAt":"2031-06-07T19:00:00+02:00"}"#)
            #expect(later.status == .ok, "\(later.status) \(later.fieldErrors)")
            let tail = try later.data(CalendarEvent.self)
            #expect(tail.rsvpDeadline == tail.startsAt.addingTimeInterval(-2 * 86_400))
        }
    }

    /// A rule that no longer has an instance drops its answers: they do not come back on an
    /// instance a later rule happens to have at that time (a hostile probe's: COUNT 4 → 2 → 4,
    /// or the rule cleared and another given, brought old answers back, waitlist flags and all).
    @Test func answersToInstancesARuleNoLongerHasAreDropped() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            try await api.join(ada, club, invitedBy: coach)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-03-04T18:00:00+01:00","recurrenceRule":"FREQ=WEEKLY;COUNT=4"}"#)
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            for week in 0..<4 {
                let start = series.startsAt + Double(week) * 7 * 86_400
                _ = try await api.call(
                    .post, "\(path)/rsvp", as: ada, json: #"{"status":"yes","recurrenceId":"\#(utc(start))"}"#)
            }
            // Ben said yes to the last week alone: when the rule drops it, he hears of the change.
            let ben = try await api.signIn("Ben")
            try await api.join(ben, club, invitedBy: coach)
            _ = try await api.call(
                .post, "\(path)/rsvp", as: ben,
                json: #"{"status":"yes","recurrenceId":"\#(utc(series.startsAt + 21 * 86_400))"}"#)
            for rule in ["FREQ=WEEKLY;COUNT=2", "FREQ=WEEKLY;COUNT=4"] {
                let edited = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":"\#(rule)"}"#)
                #expect(edited.status == .ok)
            }
            try await withTestDatabase { database in
                let told = try await count(
                    """
                    SELECT count(*)::int FROM outbox WHERE queue = 'notifications' AND message_type = 'event.updated'
                      AND data -> 'event' ->> 'eventId' = \(series.id.lowercasedString)
                      AND data -> 'event' ->> 'recurrenceRule' = 'FREQ=WEEKLY;COUNT=2'
                      AND data -> 'answeredUserIds' ? \(ben.id.lowercasedString)
                    """, in: database)
                #expect(told == 1)
            }
            var seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-04-30T00:00:00Z", as: ada)
            #expect(seen.map { $0.rsvp?.status } == [.yes, .yes, nil, nil])
            #expect(seen.map { $0.attendance?.going ?? 0 } == [1, 1, 0, 0])
            // Cleared, then a daily rule: only the first instance's answer stays.
            _ = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":null}"#)
            _ = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":"FREQ=DAILY;COUNT=10"}"#)
            seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-04-30T00:00:00Z", as: ada)
            #expect(seen.filter { $0.rsvp != nil }.map(\.startsAt) == [series.startsAt])

            // An answer an earlier rule left where it has no instance (as the code before 0072
            // did) does not come back with a rule that has one there: only instances both rules
            // have keep theirs.
            let stranded = series.startsAt + 20 * 86_400
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await owner.client.query(
                    """
                    INSERT INTO rsvps (event_id, user_id, status, recurrence_id)
                    VALUES (\(series.id), \(ada.id), 'yes', \(stranded))
                    """, logger: TestEnvironment.logger
                ).collect()
            }
            _ = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":"FREQ=DAILY;COUNT=30"}"#)
            seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-04-30T00:00:00Z", as: ada)
            #expect(seen.filter { $0.rsvp != nil }.map(\.startsAt) == [series.startsAt])

            // The answers' functions refuse a member who may not edit the event.
            try await withTestDatabase { db in
                for statement: PostgresQuery in [
                    "SELECT calendar_rekey_answers(\(series.id), NULL, \(series.startsAt))",
                    "SELECT calendar_drop_answers(\(series.id), ARRAY[\(series.startsAt)]::timestamptz[])",
                ] {
                    #expect(await SecondWallTests.run(statement, as: ada.id, in: db) == .refused)
                }
            }
            seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-04-30T00:00:00Z", as: ada)
            #expect(seen.filter { $0.rsvp != nil }.map(\.startsAt) == [series.startsAt])
        }
    }

    /// A series made a single event seats its first instance's answers by the event's
    /// capacity: a capacity set on that instance alone goes with the rule (found by a review:
    /// those waiting under the instance's capacity stayed waitlisted beside free seats).
    @Test func aSeriesMadeSingleSeatsItsAnswersByTheEventsCapacity() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let practice = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-03-04T18:00:00+01:00","recurrenceRule":"FREQ=WEEKLY;COUNT=3","capacity":3}"#
            )
            let path = "/api/v1/communities/\(club.id)/events/\(practice.id)"
            let first = utc(practice.startsAt)
            let narrowed = try await api.call(
                .patch, "\(path)?recurrenceId=\(first)&scope=this", as: coach, json: #"{"capacity":1}"#)
            #expect(narrowed.status == .ok)
            for (person, waits) in [(ada, false), (ben, true)] {
                let answer = try await api.call(
                    .post, "\(path)/rsvp", as: person, json: #"{"status":"yes","recurrenceId":"\#(first)"}"#)
                #expect(try answer.data(EventRSVP.self).waitlisted == waits)
            }
            #expect(try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":null}"#).status == .ok)
            let now = try await api.call(.get, "\(path)/attendance", as: coach).data(EventAttendance.self)
            #expect(now.responses.map(\.waitlisted) == [false, false] && now.counts.going == 2)
            #expect(try await CalendarCapacityNoticeTests.promotions(of: ben.id, at: practice.id) == 1)
        }
    }

    /// A single event made a series keeps its answers on its first instance, and a series made
    /// a single event keeps its first instance's (a hostile probe's: answers stayed under the
    /// old key, out of every read and count).
    @Test func answersFollowAnEventMadeASeriesAndBack() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            try await api.join(ada, club, invitedBy: coach)
            let practice = try await api.createEvent(
                in: club, by: coach, #"{"title":"Practice","startsAt":"2031-03-04T18:00:00+01:00","capacity":10}"#)
            let path = "/api/v1/communities/\(club.id)/events/\(practice.id)"
            _ = try await api.call(.post, "\(path)/rsvp", as: ada, json: #"{"status":"yes","plusOnes":1}"#)

            let weekly = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":"FREQ=WEEKLY;COUNT=3"}"#)
            #expect(weekly.status == .ok)
            var seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-03-31T00:00:00Z", as: ada)
            #expect(seen.map { $0.rsvp?.status } == [.yes, nil, nil])
            #expect(seen.map { $0.attendance?.seats ?? 0 } == [2, 0, 0])

            // Ada answers the second week too; made single again, the first week's answer stays.
            let second = practice.startsAt.addingTimeInterval(7 * 86_400)
            _ = try await api.call(
                .post, "\(path)/rsvp", as: ada, json: #"{"status":"maybe","recurrenceId":"\#(utc(second))"}"#)
            let single = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":null}"#)
            #expect(single.status == .ok)
            seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-03-31T00:00:00Z", as: ada)
            #expect(seen.count == 1 && seen.first?.rsvp?.status == .yes && seen.first?.attendance?.seats == 2)
            let attendance = try await api.call(.get, "\(path)/attendance", as: coach).data(EventAttendance.self)
            #expect(attendance.counts.going == 1 && attendance.responses.count == 1)

            // A series whose first instance was removed is not made a single event: that would
            // bring the removed date back as a live event (a hostile probe's).
            let weeklyAgain = try await api.call(
                .patch, path, as: coach, json: #"{"recurrenceRule":"FREQ=WEEKLY;COUNT=3"}"#)
            #expect(weeklyAgain.status == .ok)
            let removed = try await api.call(
                .delete, "\(path)?recurrenceId=\(utc(practice.startsAt))&scope=this", as: coach)
            #expect(removed.status == .noContent)
            let revived = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":null}"#)
            #expect(revived.status == .badRequest && revived.fieldErrors["recurrenceRule"] != nil)
            seen = try await api.window(club, "2031-03-01T00:00:00Z", "2031-03-31T00:00:00Z", as: ada)
            #expect(seen.count == 3 && seen.first?.cancelled == true)
        }
    }
}

extension Date {
    /// To the whole second (instances start on whole seconds).
    var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}
