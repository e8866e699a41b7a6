import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Row-level security, the second wall: queries that forget their `WHERE community_id`
/// still see only the asking user's communities, and the services' role cannot take it down.
@Suite struct TenantIsolationTests {
    @Test func aQueryThatForgetsItsFilterStillSeesOnlyItsCommunities() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve")
            )
            let tigers = try await api.community(by: ada)
            let lions = try await api.community(by: eve)
            try await api.join(ben, tigers, invitedBy: ada)
            try await api.call(.post, "/api/v1/communities/\(lions.id)/invites", as: eve, json: "{}")

            try await withTestDatabase { database in
                func visible(_ sql: PostgresQuery, as user: UUID?) async throws -> [UUID] {
                    try await database.transaction(scope: user.map { .user($0) }) { connection in
                        var ids: [UUID] = []
                        for try await id in try await connection.query(sql, logger: TestEnvironment.logger).decode(
                            UUID.self)
                        {
                            ids.append(id)
                        }
                        return ids
                    }
                }
                // No filter at all: exactly Ben's one community, its two members, its change log.
                #expect(try await visible("SELECT id FROM communities", as: ben.id) == [tigers.id])
                #expect(Set(try await visible("SELECT user_id FROM members", as: ben.id)) == [ada.id, ben.id])
                #expect(Set(try await visible("SELECT community_id FROM change_log", as: ben.id)) == [tigers.id])
                // Invites are for admins: Ben sees none, Eve only her own community's.
                #expect(try await visible("SELECT community_id FROM invites", as: ben.id).isEmpty)
                #expect(Set(try await visible("SELECT community_id FROM invites", as: eve.id)) == [lions.id])
                // Asking for another community by id finds nothing either.
                #expect(try await visible("SELECT id FROM communities WHERE id = \(lions.id)", as: ben.id).isEmpty)
                // Without a user, a request's transaction sees no community's rows.
                #expect(try await visible("SELECT id FROM communities", as: nil).isEmpty)
                #expect(try await visible("SELECT user_id FROM members", as: nil).isEmpty)

                // Writing into another community is refused by the policies as well.
                await #expect(throws: PSQLError.self) {
                    try await database.transaction(userId: ben.id) { connection in
                        try await connection.query(
                            "INSERT INTO members (community_id, user_id, role) VALUES (\(lions.id), \(ben.id), 'admin')",
                            logger: TestEnvironment.logger)
                    }
                }
                let hijack = try await database.transaction(userId: ben.id) { connection in
                    var updated = 0
                    for try await _ in try await connection.query(
                        "UPDATE communities SET name = 'pwned' WHERE id = \(lions.id) RETURNING 1",
                        logger: TestEnvironment.logger)
                    {
                        updated += 1
                    }
                    return updated
                }
                #expect(hijack == 0)
            }
        }
    }

    @Test func theServicesRoleCannotSwitchRowLevelSecurityOff() async throws {
        try await withTestDatabase { database in
            for statement: PostgresQuery in [
                "ALTER TABLE members DISABLE ROW LEVEL SECURITY",
                "DROP POLICY members_read ON members",
                "ALTER TABLE communities NO FORCE ROW LEVEL SECURITY",
            ] {
                await #expect(throws: PSQLError.self, "\(statement.sql)") {
                    try await database.client.query(statement, logger: TestEnvironment.logger)
                }
            }
            // Asking for row security off does not bypass it: PostgreSQL refuses the query.
            let someone = try #require(
                try await database.systemQuery(
                    """
                    INSERT INTO users (apple_id, email, display_name)
                    VALUES (\("test:\(UUID())"), \("\(UUID())@example.com"), 'Someone') RETURNING id
                    """
                ).first?.decode(UUID.self))
            await #expect {
                try await database.transaction(userId: someone) { connection in
                    try await connection.query("SET LOCAL row_security = off", logger: TestEnvironment.logger)
                    try await connection.run("SELECT count(*) FROM members", logger: TestEnvironment.logger)
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "42501" }
        }
    }

    /// A member removed after the gate let a write in (here, while the gate still holds their
    /// standing in its cache) meets the wall at the write. The write is refused, nothing is
    /// stored, and they hear what the gate would now say: `404 COMMUNITY_NOT_FOUND`, not `500`.
    /// One community per write: the first refusal empties the community's cache, after which
    /// the gate itself would refuse.
    @Test func aWriteTheWallRefusesBecauseItsAuthorWasRemovedIsNotFound() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let member = try await api.signIn("Member")
            let writes: [(String, (Community) -> String)] = [
                ("posts", { _ in #"{"content":"Still here?"}"# }),
                ("events", { _ in #"{"title":"Ghost match","startsAt":"2031-06-01T18:00:00Z"}"# }),
                // Outside the write path, with the same answer.
                ("/api/v1/me/calendar-feeds", { #"{"communityId":"\#($0.id)"}"# }),
            ]
            for (route, body) in writes {
                let club = try await api.club(of: coach, with: [member])
                let base = "/api/v1/communities/\(club.id)"
                let path = route.hasPrefix("/") ? route : "\(base)/\(route)"
                let json = body(club)
                #expect(try await api.call(.get, "\(base)/members", as: member).status == .ok)
                try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                    let removed = try await owner.systemQuery(
                        """
                        UPDATE members SET left_at = now(), removed_by = \(coach.id)
                        WHERE community_id = \(club.id) AND user_id = \(member.id) RETURNING 1
                        """)
                    #expect(removed.count == 1)
                }
                let reply = try await api.call(.post, path, as: member, json: json)
                #expect(
                    reply.status == .notFound && reply.errorCode == "COMMUNITY_NOT_FOUND",
                    "\(route): \(reply.status) \(reply.errorCode ?? "")")
            }
            let stored = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await owner.systemQuery(
                    """
                    SELECT 1 FROM posts WHERE author_id = \(member.id)
                    UNION ALL SELECT 1 FROM events WHERE created_by = \(member.id)
                    UNION ALL SELECT 1 FROM calendar_feeds WHERE user_id = \(member.id)
                    """)
            }
            #expect(stored.isEmpty)
        }
    }
}
