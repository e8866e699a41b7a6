import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Each instance's counts (`event_instance_counts`, kept by a trigger on every answer) stay
/// equal to its answers when one statement moves many answers at once: a series moved or split
/// moves every answer of its later instances (`calendar_move_answers`), and the counts of the
/// instance they land on used to be counted once whole by the first moved answer and then once
/// more by each of the others (a hostile probe's: three yeses shown as five going).
@Suite struct CalendarCountsTests {
    @Test func countsFollowAnswersMovedWithTheirSeries() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let members = [try await api.signIn("Ada"), try await api.signIn("Ben")]
            let club = try await api.club(of: coach, with: members)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-03-04T18:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=6","capacity":10}"#
            )
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            for person in [coach] + members {
                let answer = try await api.call(
                    .post, "\(path)/rsvp", as: person,
                    json: #"{"status":"yes","plusOnes":1,"recurrenceId":"2031-03-25T18:00:00Z"}"#)
                #expect(answer.status == .ok)
            }
            try await api.call(
                .post, "\(path)/rsvp", as: members[0],
                json: #"{"status":"maybe","recurrenceId":"2031-04-01T18:00:00Z"}"#)

            // The whole series an hour later: its answers move with their instances.
            let moved = try await api.call(.patch, path, as: coach, json: #"{"startsAt":"2031-03-04T19:00:00Z"}"#)
            #expect(moved.status == .ok)
            try await expectCounts(api, club, series.id, at: "2031-03-25T19:00:00Z", going: 3, seats: 6, by: coach)
            try await expectCounts(api, club, series.id, at: "2031-04-01T19:00:00Z", maybe: 1, by: coach)

            // Split from the third instance on: the later answers move to the new series.
            let split = try await api.call(
                .patch, "\(path)?recurrenceId=2031-03-18T19:00:00Z&scope=following", as: coach,
                json: #"{"title":"Practice v2"}"#)
            #expect(split.status == .ok)
            let tail = try split.data(CalendarEvent.self)
            try await expectCounts(api, club, tail.id, at: "2031-03-25T19:00:00Z", going: 3, seats: 6, by: coach)
            try await expectCounts(api, club, tail.id, at: "2031-04-01T19:00:00Z", maybe: 1, by: coach)

            // Every counts row of both series is its instance's answers counted afresh, and no
            // row is left counting answers at a key no answer has (the moves park answers
            // 5,000 years ahead on the way).
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                let wrong = try await owner.systemQuery(
                    """
                    SELECT c.event_id, c.recurrence_id, c.going, c.seats, c.maybe
                    FROM event_instance_counts c
                    LEFT JOIN LATERAL (
                        SELECT count(*) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted) AS going,
                               coalesce(sum(1 + r.plus_ones) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted), 0) AS seats,
                               count(*) FILTER (WHERE r.status = 'maybe') AS maybe,
                               count(*) FILTER (WHERE r.status = 'no') AS declined,
                               count(*) FILTER (WHERE r.waitlisted) AS waitlisted
                        FROM rsvps r
                        WHERE r.event_id = c.event_id AND r.recurrence_id IS NOT DISTINCT FROM c.recurrence_id
                    ) a ON true
                    WHERE c.event_id IN (\(series.id), \(tail.id))
                      AND (c.going, c.seats, c.maybe, c.declined, c.waitlisted)
                          <> (a.going, a.seats, a.maybe, a.declined, a.waitlisted)
                    """)
                #expect(wrong.isEmpty, "\(wrong.count) counts rows differ from their answers")
                let parked = try await owner.systemQuery(
                    """
                    SELECT 1 FROM event_instance_counts
                    WHERE event_id IN (\(series.id), \(tail.id)) AND recurrence_id >= '3000-01-01'
                    """)
                #expect(parked.isEmpty, "\(parked.count) counts rows left at parked keys")
            }
        }
    }

    private func expectCounts(
        _ api: CoreHarness, _ club: Community, _ event: UUID, at instance: String, going: Int = 0, seats: Int = 0,
        maybe: Int = 0, by person: CoreHarness.Person, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let path = "/api/v1/communities/\(club.id)/events/\(event)"
        let shown = try await api.call(.get, "\(path)?recurrenceId=\(instance)", as: person).data(CalendarEvent.self)
        let attendance = try #require(shown.attendance, sourceLocation: sourceLocation)
        #expect(
            attendance.going == going && attendance.seats == seats && attendance.maybe == maybe,
            "\(instance): \(attendance)", sourceLocation: sourceLocation)
        let listed = try await api.call(.get, "\(path)/attendance?recurrenceId=\(instance)", as: person)
            .data(EventAttendance.self)
        #expect(listed.counts.going == going && listed.counts.maybe == maybe, sourceLocation: sourceLocation)
    }
}

/// Migration 0069 repairs what was miscounted before it: on a database migrated to 0068, the
/// old `calendar_move_answers` inflates a moved instance's counts and leaves counts at a parked
/// key, and an answered instance has lost its counts row (as answers written past the trigger
/// leave it); after 0069 every counts row is its answers counted afresh, every answered instance
/// has one, and none is parked.
@Suite struct CountsRepairMigrationTests {
    @Test func theMigrationRecountsWhatTheOldMovesMiscounted() async throws {
        let migrations = try Migration.bundled()
        let repair = try #require(migrations.firstIndex { $0.name.hasPrefix("0069_") })
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                _ = try await runner.migrate(Array(migrations[..<repair]))
                let (user, community) = (UUID(), UUID())
                let (series, single) = (UUID(), UUID())
                let week = "2031-03-04T18:00:00Z"
                try await database.transaction(scope: .system) { connection in
                    for statement: PostgresQuery in [
                        "INSERT INTO users (id, apple_id, email, display_name) VALUES (\(user), 'a', 'a@example.com', 'Ada')",
                        "INSERT INTO communities (id, name, created_by) VALUES (\(community), 'Club', \(user))",
                        """
                        INSERT INTO events (id, community_id, created_by, title, starts_at, recurrence_rule)
                        VALUES (\(series), \(community), \(user), 'Practice', \(week)::timestamptz, 'FREQ=WEEKLY;COUNT=6'),
                               (\(single), \(community), \(user), 'Game', \(week)::timestamptz, NULL)
                        """,
                        """
                        INSERT INTO family_members (id, user_id, name)
                        SELECT gen_random_uuid(), \(user), 'Kid ' || n FROM generate_series(1, 2) n
                        """,
                    ] {
                        try await connection.run(statement, logger: TestEnvironment.logger)
                    }
                    // Three answers to the third instance (Ada's and two dependants'), one to the single event.
                    try await connection.run(
                        """
                        INSERT INTO rsvps (event_id, recurrence_id, user_id, family_member_id, status)
                        SELECT \(series), '2031-03-18T18:00:00Z', \(user), f.id, 'yes'
                        FROM (SELECT NULL::uuid AS id UNION ALL SELECT id FROM family_members WHERE user_id = \(user)) f
                        """, logger: TestEnvironment.logger)
                    try await connection.run(
                        "INSERT INTO rsvps (event_id, user_id, status) VALUES (\(single), \(user), 'maybe')",
                        logger: TestEnvironment.logger)
                    // The whole series an hour later, as 0020's function moved it; the single
                    // event's counts row lost.
                    try await connection.run(
                        """
                        SELECT calendar_move_answers(\(series), \(series), '-infinity', make_interval(hours => 1), 'UTC')
                        """, logger: TestEnvironment.logger)
                    try await connection.run(
                        "DELETE FROM event_instance_counts WHERE event_id = \(single)", logger: TestEnvironment.logger)
                }
                #expect(try await Self.going(series, at: "2031-03-18T19:00:00Z", in: database) == 5)
                _ = try await runner.migrate(migrations)
                #expect(try await Self.going(series, at: "2031-03-18T19:00:00Z", in: database) == 3)
                let rows = try await database.systemQuery(
                    """
                    SELECT c.recurrence_id, c.going, c.maybe FROM event_instance_counts c
                    WHERE c.event_id IN (\(series), \(single)) AND (c.going, c.maybe) <> (0, 0)
                    ORDER BY c.event_id = \(single), c.recurrence_id
                    """)
                let counts = try rows.map { try $0.decode((Date?, Int, Int).self) }
                #expect(counts.count == 2, "\(counts)")
                #expect(counts.first.map { $0.1 == 3 && $0.2 == 0 } == true, "\(counts)")
                #expect(counts.last.map { $0.0 == nil && $0.1 == 0 && $0.2 == 1 } == true, "\(counts)")
                let parked = try await database.systemQuery(
                    "SELECT 1 FROM event_instance_counts WHERE recurrence_id >= '3000-01-01'")
                #expect(parked.isEmpty)
            }
        }
    }

    private static func going(_ event: UUID, at instance: String, in database: Database) async throws -> Int? {
        try await database.systemQuery(
            """
            SELECT going FROM event_instance_counts
            WHERE event_id = \(event) AND recurrence_id = \(instance)::timestamptz
            """
        ).first?.decode(Int.self)
    }
}
