import CoreService
import Foundation
import MediaService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import RemindersService
import Synchronization
import Testing

/// The shape every feature stands on: the write path records only what happened, and a
/// first sync of a big community comes in bounded pages without missing concurrent changes.
@Suite struct FeatureShapeTests {
    /// Two deletions racing past the gate: only the one that changed a row is recorded.
    @Test func aChangeThatTouchedNothingRecordsAndSendsNothing() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let redis = try RedisClient(url: TestEnvironment.redisURL, connections: 1, logger: TestEnvironment.logger)
            try await withTestDatabase { database in
                try await withServices([redis]) {
                    let cache = CommunityCache(redis: redis, ttlSeconds: 60, logger: TestEnvironment.logger)
                    let writes = CommunityWrites(database: database, cache: cache, logger: TestEnvironment.logger)
                    let action = "test.deleted-\(UUID.random().lowercasedString.prefix(8))"
                    for _ in 0..<2 {
                        try await writes.change(in: club.id, by: ada.id, request: RequestFacts()) {
                            change, connection in
                            change.touched(
                                try await connection.changedRows(
                                    """
                                    UPDATE communities SET deleted_at = NOW()
                                    WHERE id = \(club.id) AND deleted_at IS NULL RETURNING 1
                                    """, logger: TestEnvironment.logger))
                            change.audit(action, target: ("community", club.id))
                            change.announce(
                                CommunityUpdated(
                                    communityId: club.id, name: action, changes: ["deleted"], updatedBy: ada.id))
                        }
                    }
                    let audits = try await count(
                        "SELECT count(*)::int FROM audit_log WHERE action = \(action)", in: database)
                    let messages = try await count(
                        "SELECT count(*)::int FROM outbox WHERE data ->> 'name' = \(action)", in: database)
                    #expect(audits == 1 && messages == 1)
                }
            }
        }
    }

    /// 10,000 members sync in pages of at most 500 while members join, leave and rename; the
    /// pages plus one incremental sync from the first page's token end exactly where the
    /// database is.
    @Test func aFirstSyncOfTenThousandRowsIsPagedAndMissesNothing() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let tag = UUID.random().lowercasedString.prefix(8)
            try await withTestDatabase { database in
                try await database.systemQuery(
                    """
                    WITH people AS (
                        INSERT INTO users (apple_id, email, display_name)
                        SELECT 'bulk:' || \(String(tag)) || ':' || g, '', 'Member ' || g FROM generate_series(1, 9999) g
                        RETURNING id
                    )
                    INSERT INTO members (community_id, user_id, role) SELECT \(club.id), id, 'member' FROM people
                    """)
                // Writers keep changing the community while the client pages through it.
                let writing = Task {
                    for round in 0..<40 {
                        try await database.systemQuery(
                            """
                            WITH people AS (
                                INSERT INTO users (apple_id, email, display_name)
                                VALUES ('late:' || \(String(tag)) || ':' || \(round), '', 'Late \(round)') RETURNING id
                            )
                            INSERT INTO members (community_id, user_id, role) SELECT \(club.id), id, 'member' FROM people
                            """)
                        try await database.systemQuery(
                            """
                            UPDATE members SET left_at = NOW() WHERE id = (
                                SELECT id FROM members WHERE community_id = \(club.id) AND left_at IS NULL
                                  AND role = 'member' ORDER BY random() LIMIT 1)
                            """)
                        try await database.systemQuery(
                            """
                            UPDATE users SET display_name = 'Renamed \(round)' WHERE id = (
                                SELECT user_id FROM members WHERE community_id = \(club.id) AND left_at IS NULL
                                ORDER BY random() LIMIT 1)
                            """)
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
                var replica: [UUID: CommunityMember] = [:]
                var pages = 0
                var sync = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: ada)
                    .data(CommunitySync.self)
                #expect(sync.full)
                let token = sync.syncToken
                while true {
                    pages += 1
                    #expect(sync.members.created.count <= 500 && sync.syncToken == token)
                    for member in sync.members.created { replica[member.userId] = member }
                    guard let next = sync.nextPage else { break }
                    sync = try await api.call(.get, "/api/v1/communities/\(club.id)/sync?page=\(next)", as: ada)
                        .data(CommunitySync.self)
                    #expect(!sync.full)
                }
                #expect(pages >= 20)
                try await writing.value
                let changes = try await api.call(.get, "/api/v1/communities/\(club.id)/sync?since=\(token)", as: ada)
                    .data(CommunitySync.self)
                for member in changes.members.created + changes.members.updated { replica[member.userId] = member }
                for id in changes.members.deleted { replica[id] = nil }

                let truth = try await database.systemQuery(
                    """
                    SELECT m.user_id, u.display_name FROM members m JOIN users u ON u.id = m.user_id
                    WHERE m.community_id = \(club.id) AND m.left_at IS NULL
                    """)
                var expected: [UUID: String] = [:]
                for row in truth {
                    let (id, name) = try row.decode((UUID, String).self)
                    expected[id] = name
                }
                #expect(expected.count > 9_900)
                #expect(replica.mapValues(\.displayName) == expected)
            }
        }
    }
}

/// Every service is built from the same kit: the reminders and media services can gate
/// community routes, publish through their own outbox relay and run periodic jobs.
@Suite struct ServiceKitTests {
    @Test func theRemindersAndMediaServicesHaveTheWholeKit() throws {
        for (name, parts) in [
            (
                "reminders",
                try RemindersApplication.parts(runtime: TestEnvironment.runtime(name: "orbitcove-reminders"))
            ),
            ("media", try MediaApplication.parts(runtime: TestEnvironment.runtime(name: "orbitcove-media"))),
        ] {
            let kinds = Set(parts.services.map { String(describing: type(of: $0)) })
            for expected in ["OutboxRelay", "AMQPPublisher", "BlockingPool", "AMQPConsumer", "InboxPruner"] {
                #expect(kinds.contains(expected), "\(name) lacks \(expected)")
            }
        }
    }

    /// A change written through a service's kit reaches the broker through that service's relay,
    /// and a periodic job runs on its schedule.
    @Test func aKitPublishesWhatItsWritesAnnounceAndRunsItsJobs() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let kit = try ServiceKit(runtime: TestEnvironment.runtime(name: "orbitcove-reminders"))
            let runs = Mutex(0)
            let job = PeriodicJob("tick", every: .milliseconds(100), logger: TestEnvironment.logger) {
                runs.withLock { $0 += 1 }
            }
            try await withServices(kit.services + [job]) {
                let name = "kit-\(UUID.random().lowercasedString.prefix(8))"
                try await kit.writes.change(in: club.id, by: ada.id, request: RequestFacts()) { change, connection in
                    change.touched(
                        try await connection.changedRows(
                            "UPDATE communities SET description = \(name) WHERE id = \(club.id) RETURNING 1",
                            logger: TestEnvironment.logger))
                    change.announce(
                        CommunityUpdated(communityId: club.id, name: name, changes: ["description"], updatedBy: ada.id))
                }
                let published = try await eventually {
                    try await count(
                        """
                        SELECT count(*)::int FROM outbox WHERE data ->> 'name' = \(name) AND published_at IS NOT NULL
                        """, in: kit.database) == 1
                }
                #expect(published)
                #expect(try await eventually { runs.withLock { $0 } >= 3 })
            }
        }
    }
}
