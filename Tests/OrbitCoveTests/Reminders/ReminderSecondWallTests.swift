import Foundation
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

@testable import RemindersService

/// The wall around care reminders holds on its own: statements the service would never run,
/// run as the services' role in a member's context, are refused or see nothing.
@Suite struct ReminderSecondWallTests {
    typealias Wall = SecondWallTests

    @Test func membersCannotReachAnotherCommunityOrBendTheirOwnRules() async throws {
        try await RemindersHarness.run { harness in
            let api = harness.api
            let (coach, ada, ben, eve) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                try await api.signIn("Eve")
            )
            let club = try await api.club(of: coach, with: [ada, ben])
            let other = try await api.club(of: eve, with: [])
            let walk = try await harness.reminder(
                in: club, by: ben, #"{"title":"Walk","recurrenceRule":"FREQ=DAILY","timeOfDay":"07:30"}"#)
            let tomorrow = CareReminderTests.day(CareRoutes.today(in: "UTC"), plus: 1)
            let db = harness.database
            let occurrence = "reminder_id = '\(walk.id)' AND local_date = '\(tomorrow)'"
            func run(_ sql: String, as person: CoreHarness.Person) async -> Wall.Outcome {
                await Wall.run(PostgresQuery(unsafeSQL: sql), as: person.id, in: db)
            }

            // Another community's member sees nothing and changes nothing.
            #expect(await run("SELECT id FROM care_reminders WHERE id = '\(walk.id)'", as: eve) == .rows(0))
            #expect(await run("SELECT id FROM care_occurrences WHERE reminder_id = '\(walk.id)'", as: eve) == .rows(0))
            #expect(
                await run("UPDATE care_reminders SET title = 'x' WHERE id = '\(walk.id)' RETURNING 1", as: eve)
                    == .rows(0))
            #expect(
                await run(
                    """
                    INSERT INTO care_reminders (community_id, title, recurrence_rule, time_of_day, starts_on, created_by)
                    VALUES ('\(club.id)', 'x', 'FREQ=DAILY', '07:30', '2030-01-01', '\(eve.id)') RETURNING 1
                    """, as: eve) == .refused)
            // A reminder is moved to no other community, and assigned to no stranger.
            #expect(
                await run(
                    "UPDATE care_reminders SET community_id = '\(other.id)' WHERE id = '\(walk.id)' RETURNING 1",
                    as: ben)
                    == .refused)
            #expect(
                await run(
                    "UPDATE care_reminders SET assignee_id = '\(eve.id)' WHERE id = '\(walk.id)' RETURNING 1", as: ben)
                    == .refused)
            // Only its creator or an admin deletes it, and nobody brings it back.
            #expect(
                await run("UPDATE care_reminders SET deleted_at = now() WHERE id = '\(walk.id)' RETURNING 1", as: ada)
                    == .refused)

            // Occurrences are the system's to make and to place in time.
            #expect(
                await run(
                    """
                    INSERT INTO care_occurrences (reminder_id, community_id, local_date, due_at)
                    VALUES ('\(walk.id)', '\(club.id)', '2031-01-01', now()) RETURNING 1
                    """, as: ada) == .refused)
            #expect(
                await run(
                    "UPDATE care_occurrences SET due_at = now() + interval '1 year' WHERE \(occurrence) RETURNING 1",
                    as: ada) == .refused)
            // Marked as someone else; snoozed for a year; a snooze taken back.
            #expect(
                await run(
                    "UPDATE care_occurrences SET status = 'done', completed_by = '\(ben.id)' WHERE \(occurrence) RETURNING 1",
                    as: ada) == .refused)
            #expect(
                await run(
                    """
                    UPDATE care_occurrences SET snoozed_until = now() + interval '1 year', snoozes = snoozes + 1
                    WHERE \(occurrence) RETURNING 1
                    """, as: ada) == .refused)
            #expect(
                await run(
                    "UPDATE care_occurrences SET snoozes = 5 WHERE \(occurrence) RETURNING 1", as: ada) == .refused)
            // Marked by oneself, the time is the database's, and then it stays as it is.
            #expect(
                await run(
                    """
                    UPDATE care_occurrences SET status = 'done', completed_by = '\(ada.id)', completed_at = '2001-01-01'
                    WHERE \(occurrence) RETURNING 1
                    """, as: ada) == .rows(1))
            let marked = try await count(
                "SELECT count(*)::int FROM care_occurrences WHERE \(unescaped: occurrence) AND completed_at > now() - interval '1 minute'",
                in: db)
            #expect(marked == 1)
            #expect(
                await run("UPDATE care_occurrences SET status = 'skipped' WHERE \(occurrence) RETURNING 1", as: ben)
                    == .refused)
            #expect(
                await run(
                    "UPDATE care_occurrences SET assignee_id = '\(ben.id)' WHERE \(occurrence) RETURNING 1", as: ben)
                    == .refused)

            // The planning mark a member's change takes first (0080) is taken for a reminder of
            // the caller's communities only. The mark is set to a time the horizon leaves alone:
            // another community's member leaves it so, a member marks it for planning.
            let untouched: PostgresQuery =
                "SELECT count(*)::int FROM reminder_subjects WHERE subject_id = \(walk.id) AND filled_until = 'infinity'"
            _ = try await db.systemQuery(
                "UPDATE reminder_subjects SET filled_until = 'infinity' WHERE subject_id = \(walk.id) RETURNING 1")
            #expect(await run("SELECT care_take_planning_mark('\(walk.id)')", as: eve) == .rows(1))
            #expect(try await count(untouched, in: db) == 1)
            #expect(await run("SELECT care_take_planning_mark('\(walk.id)')", as: ada) == .rows(1))
            #expect(try await count(untouched, in: db) == 0)

            // The schedule and the horizon are the system's alone.
            #expect(await run("SELECT id FROM reminder_schedule", as: ada) == .rows(0))
            #expect(await run("SELECT subject_id FROM reminder_subjects", as: ada) == .rows(0))
            #expect(await run("UPDATE reminder_schedule SET fired_at = now() RETURNING 1", as: ada) == .rows(0))
            #expect(
                await run(
                    """
                    INSERT INTO reminder_schedule (community_id, kind, subject_id, occurrence, due_at)
                    VALUES ('\(club.id)', 'care_due', '\(walk.id)', '2031-01-01', now()) RETURNING 1
                    """, as: ada) == .refused)
        }
    }
}
