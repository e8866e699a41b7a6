import Foundation
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

@testable import RemindersService

/// Event reminders, RSVP nudges and the creator's summary, planned from core's messages and
/// fired with their recipients worked out then; dues reminders stopped by a payment or a
/// waiver. Each row is made due by moving its due time, then fired by the service's scheduler.
@Suite struct EventReminderTests {
    static func iso(_ date: Date) -> String { JSONCoding.formatTimestamp(date) }

    /// Waits until the subject's rows match `condition`.
    static func planned(
        _ harness: RemindersHarness, _ subject: UUID,
        _ condition: @escaping @Sendable ([RemindersHarness.ScheduleRow]) -> Bool
    ) async throws -> [RemindersHarness.ScheduleRow] {
        let held = try await eventually(timeout: .seconds(20)) { condition(try await harness.schedule(of: subject)) }
        let rows = try await harness.schedule(of: subject)
        guard held else { throw TestFailure("rows of \(subject) never matched: \(rows)") }
        return rows
    }

    /// The pass's look for events nobody planned (at start, then daily) and a planner of a
    /// community's events (each `event.*` message) take subjects' rows in one order, ascending
    /// id. The look took them in storage order: holding a higher one, it waited for a lower one a
    /// planner held, while the planner waited for the higher one (PostgreSQL broke the deadlock:
    /// a failed pass or a redelivered message, and a warning, seen in every test run).
    @Test func lookingForUnplannedEventsAndPlanningTakeSubjectsInOneOrder() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            @Sendable func take(_ event: UUID) -> PostgresQuery {
                """
                INSERT INTO reminder_subjects (kind, subject_id, community_id) VALUES ('event', \(event), \(club.id))
                ON CONFLICT (kind, subject_id) DO NOTHING
                """
            }
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                // Two events stored higher id first, written in SQL: no message of core's has a
                // reminders consumer (another test's) plan them. Another test's look at its start
                // may still make their rows before the planner below does: then the round is
                // made again with new events.
                for _ in 0..<3 {
                    let ids = [UUID(), UUID()].sorted { $0.lowercasedString < $1.lowercasedString }
                    let (higher, lower) = (ids[1], ids[0])
                    for event in [higher, lower] {
                        try await owner.systemQuery(
                            """
                            INSERT INTO events (id, community_id, created_by, title, starts_at)
                            VALUES (\(event), \(club.id), \(coach.id), 'Match', '2031-06-01T18:00:00Z')
                            RETURNING 1
                            """)
                    }
                    // A planner of the community's events: the lower one's row, then the higher one's.
                    let planner = try await HeldTransaction.start(take(lower), on: owner)
                    let beaten = try await owner.systemQuery(
                        "SELECT 1 FROM reminder_subjects WHERE subject_id IN (\(lower), \(higher))")
                    guard beaten.isEmpty else {
                        await planner.end()
                        continue
                    }
                    let horizon = ReminderHorizon(
                        database: owner, logger: TestEnvironment.logger, wakeups: SchedulerWakeups())
                    let looking = Task {
                        try await owner.transaction(scope: .system) { try await horizon.discover(on: $0, in: club.id) }
                    }
                    // The look waits for the planner's row, and the planner goes on: both finish.
                    #expect(try await eventually { try await planner.isWaitedOn() })
                    await #expect(throws: Never.self) { try await planner.end(after: take(higher)) }
                    await #expect(throws: Never.self) { try await looking.value }
                    let subjects = try await owner.systemQuery(
                        "SELECT 1 FROM reminder_subjects WHERE subject_id IN (\(lower), \(higher))")
                    #expect(subjects.count == 2)
                    return
                }
                Issue.record("other tests' looks made the events' rows first three times")
            }
        }
    }

    @Test func remindersFollowLeadTimesAnswersMovesAndCancellation() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada, ben])
            // Ada wants hers 90 and 30 minutes before, not the community's 24 hours.
            let prefs = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/members/me/notification-preferences", as: ada,
                json: #"{"eventReminderMinutes":[30,90]}"#)
            #expect(try prefs.data(NotificationPreferences.self).eventReminderMinutes == [90, 30])
            let year = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/members/me/notification-preferences", as: ben,
                json: #"{"eventReminderMinutes":[525600]}"#)
            #expect(year.status == .badRequest && year.fieldErrors["eventReminderMinutes"] != nil)

            let start = Date().addingTimeInterval(3 * 86_400).rounded(toMinutes: 1)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"\#(Self.iso(start))"}"#)
            let rows = try await Self.planned(harness, event.id) { rows in
                Set(rows.filter { $0.kind == "event_reminder" }.map(\.step)) == [30, 90, 1440]
            }
            for row in rows where row.kind == "event_reminder" {
                #expect(row.dueAt == start.addingTimeInterval(-Double(row.step) * 60))
            }
            // An event that asks for no answers is not nudged.
            #expect(!rows.contains { $0.kind == "rsvp_nudge" || $0.kind == "rsvp_summary" })

            // Ben says no: the day-before reminder reaches the coach alone (Ada has her own).
            _ = try await api.call(
                .post, "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp", as: ben, json: #"{"status":"no"}"#)
            try await harness.settled(club)
            try await harness.makeDue(event.id, kind: "event_reminder", step: 1440)
            let dayBefore = try await harness.fired(event.id, kind: "event_reminder")
            #expect(dayBefore.map(\.recipients) == [[coach.id]])
            #expect(dayBefore.first?.startsAt == start && dayBefore.first?.title == "Match")

            // Moved two hours later: the reminders still ahead move with it.
            let later = start.addingTimeInterval(2 * 3600)
            let moved = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach,
                json: #"{"startsAt":"\#(Self.iso(later))"}"#)
            #expect(moved.status == .ok)
            _ = try await Self.planned(harness, event.id) { rows in
                rows.contains {
                    $0.kind == "event_reminder" && $0.step == 90 && $0.dueAt == later.addingTimeInterval(-5400)
                }
            }
            try await harness.settled(club)
            try await harness.makeDue(event.id, kind: "event_reminder", step: 90)
            let ninety = try await harness.fired(event.id, kind: "event_reminder", count: 2)
            #expect(ninety.last?.recipients == [ada.id] && ninety.last?.startsAt == later)

            // Deleted: nothing more is waiting.
            #expect(
                try await api.call(.delete, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach).status
                    == .noContent)
            _ = try await Self.planned(harness, event.id) { rows in rows.allSatisfy { $0.firedAt != nil } }
        }
    }

    @Test func aSeriesIsPlannedPerInstanceAndAnInstanceMovesAlone() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let coach = try await api.signIn("Coach")
            let club = try await api.community(
                by: coach, settings: #"{"timezone":"Europe/Berlin","defaultReminderHours":2}"#)
            let first = Date().addingTimeInterval(86_400).rounded(toMinutes: 60)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Training","startsAt":"\#(Self.iso(first))","recurrenceRule":"FREQ=WEEKLY"}"#
            )
            // Weekly for the 60-day horizon: 9 instances (the first tomorrow).
            let rows = try await Self.planned(harness, series.id) { rows in
                rows.filter { $0.kind == "event_reminder" }.count >= 8
            }
            let reminders = rows.filter { $0.kind == "event_reminder" }
            #expect((8...9).contains(reminders.count) && reminders.allSatisfy { $0.step == 120 })
            let keys = Set(reminders.map(\.occurrence))
            #expect(keys.contains(Self.iso(first)))

            // The second instance alone moves an hour later.
            let second = try #require(reminders.map(\.occurrence).sorted().dropFirst().first)
            let secondStart = try #require(JSONCoding.parseTimestamp(second))
            let moved = try await api.call(
                .patch, "/api/v1/communities/\(club.id)/events/\(series.id)?recurrenceId=\(second)&scope=this",
                as: coach,
                json: #"{"startsAt":"\#(Self.iso(secondStart.addingTimeInterval(3600)))"}"#)
            #expect(moved.status == .ok)
            let after = try await Self.planned(harness, series.id) { rows in
                rows.contains { $0.occurrence == second && $0.dueAt == secondStart.addingTimeInterval(3600 - 7200) }
            }
            // The others stayed where they were.
            let firstRow = try #require(after.first { $0.occurrence == Self.iso(first) })
            #expect(firstRow.dueAt == first.addingTimeInterval(-7200))
        }
    }

    @Test func nudgesGoToTheSilentAndTheCreatorHearsWhoIsComing() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let (coach, ada, ben, cy) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                try await api.signIn("Cy")
            )
            let club = try await api.club(of: coach, with: [ada, ben, cy])
            let start = Date().addingTimeInterval(4 * 86_400).rounded(toMinutes: 1)
            let deadline = start.addingTimeInterval(-2 * 86_400)
            let event = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Away game","startsAt":"\#(Self.iso(start))","capacity":10,"rsvpDeadline":"\#(Self.iso(deadline))"}"#
            )
            let rows = try await Self.planned(harness, event.id) { rows in
                rows.filter { $0.kind == "rsvp_nudge" }.count == 2 && rows.contains { $0.kind == "rsvp_summary" }
            }
            #expect(
                rows.contains {
                    $0.kind == "rsvp_nudge" && $0.step == 0 && $0.dueAt == start.addingTimeInterval(-48 * 3600)
                })
            #expect(
                rows.contains {
                    $0.kind == "rsvp_nudge" && $0.step == 1 && $0.dueAt == deadline.addingTimeInterval(-24 * 3600)
                })
            #expect(rows.contains { $0.kind == "rsvp_summary" && $0.dueAt == start.addingTimeInterval(-24 * 3600) })

            let path = "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp"
            _ = try await api.call(.post, path, as: ada, json: #"{"status":"yes"}"#)
            _ = try await api.call(.post, path, as: ben, json: #"{"status":"no"}"#)
            try await harness.settled(club)
            try await harness.makeDue(event.id, kind: "rsvp_nudge", step: 1)
            let nudged = try await harness.fired(event.id, kind: "rsvp_nudge")
            #expect(Set(nudged.first?.recipients ?? []) == [coach.id, cy.id])
            try await harness.makeDue(event.id, kind: "rsvp_summary")
            let summary = try await harness.fired(event.id, kind: "rsvp_summary")
            #expect(summary.first?.recipients == [coach.id])
            #expect(summary.first?.answers == ReminderDue.Answers(yes: 1, no: 1, maybe: 0, silent: 2))
        }
    }

    @Test func duesRemindersStopOnceAMemberPaysOrIsWaived() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada, ben])
            let dueDate = try #require(CivilDate(isoText: CareRoutes.today(in: "UTC"))?.adding(days: 5)).isoText
            let dues = try await api.call(
                .post, "/api/v1/communities/\(club.id)/dues", as: coach,
                json:
                    #"{"name":"Season","amount":5000,"currency":"EUR","dueDate":"\#(dueDate)","memberIds":["\#(ada.id)","\#(ben.id)"]}"#
            ).data(Dues.self)
            // Three days before, then 1, 7, 14 and 30 days overdue, at 09:00.
            let rows = try await Self.planned(harness, dues.id) { rows in rows.count == 5 }
            #expect(rows.map(\.step) == [-3, 1, 7, 14, 30] && rows.allSatisfy { $0.occurrence == dueDate })
            let day = try #require(CivilDate(isoText: dueDate))
            let nine = try #require(CivilDateTime(date: day, hour: 9, minute: 0, second: 0))
            #expect(rows.first { $0.step == 1 }?.dueAt == nine.date(in: .gmt).addingTimeInterval(86_400))

            try await harness.settled(club)
            try await harness.makeDue(dues.id, kind: "dues_reminder", step: -3)
            let before = try await harness.fired(dues.id, kind: "dues_reminder")
            #expect(Set(before.first?.recipients ?? []) == [ada.id, ben.id])
            #expect(before.first?.amount == 5000 && before.first?.currency == "EUR")

            // Ada pays part, Ben is waived: only Ada still owes.
            let path = "/api/v1/communities/\(club.id)/dues/\(dues.id)"
            _ = try await api.call(
                .post, "\(path)/payments", as: coach, json: #"{"userId":"\#(ada.id)","amount":2000,"method":"cash"}"#)
            _ = try await api.call(.post, "\(path)/waivers", as: coach, json: #"{"userId":"\#(ben.id)"}"#)
            try await harness.settled(club)
            try await harness.makeDue(dues.id, kind: "dues_reminder", step: 1)
            let overdue = try await harness.fired(dues.id, kind: "dues_reminder", count: 2)
            #expect(overdue.last?.recipients == [ada.id])
            // Paid in full: the next finds nobody and sends nothing.
            _ = try await api.call(
                .post, "\(path)/payments", as: coach, json: #"{"userId":"\#(ada.id)","amount":3000,"method":"cash"}"#)
            try await harness.settled(club)
            try await harness.makeDue(dues.id, kind: "dues_reminder", step: 7)
            _ = try await harness.fired(dues.id, kind: "dues_reminder", count: 3)
            #expect(try await harness.schedule(of: dues.id).first { $0.step == 7 }?.outcome == "nobody")
            #expect(try await harness.messages(about: dues.id).count == 2)
        }
    }

    /// Dues owed by every member remind those who were members when they fell due or were set
    /// up, as core's standings count them (`DuesJoiningTests`).
    @Test func everyonesDuesRemindOnlyThoseWhoWereMembersWhenTheyFellDue() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada])
            try await DuesJoiningTests.joined(daysAgo: 100, in: club)
            let dueDate = try #require(CivilDate(isoText: CareRoutes.today(in: "UTC"))?.adding(days: -10)).isoText
            let dues = try await api.call(
                .post, "/api/v1/communities/\(club.id)/dues", as: coach,
                json: #"{"name":"Season","amount":5000,"currency":"EUR","dueDate":"\#(dueDate)"}"#
            ).data(Dues.self)
            // Set up 20 days ago, due 10 days ago; Ben joins today.
            try await DuesJoiningTests.setUp(dues, daysAgo: 20)
            try await api.join(ben, club, invitedBy: coach)
            _ = try await Self.planned(harness, dues.id) { rows in rows.contains { $0.step == 14 } }
            try await harness.settled(club)
            try await harness.makeDue(dues.id, kind: "dues_reminder", step: 14)
            let overdue = try await harness.fired(dues.id, kind: "dues_reminder")
            #expect(Set(overdue.first?.recipients ?? []) == [coach.id, ada.id])
        }
    }
}

extension Date {
    /// This instant on a whole multiple of `minutes` (so an API's millisecond form round-trips).
    func rounded(toMinutes minutes: Int) -> Date {
        let step = Double(minutes * 60)
        return Date(timeIntervalSince1970: (timeIntervalSince1970 / step).rounded(.up) * step)
    }
}
