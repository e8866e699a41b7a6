import CoreService
import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// The caller's communities are read once per transaction (migration 0024) and the policies
/// compare against that list: it must follow the caller's own membership changes inside the
/// transaction, belong to the caller alone, and show nothing of anybody else's communities.
@Suite struct SecondWallCommunitiesTests {
    static func count(_ sql: PostgresQuery, on connection: PostgresConnection) async throws -> Int {
        try await connection.query(sql, logger: TestEnvironment.logger).collect().count
    }

    @Test func aUserSeesNothingOfACommunityTheyAreNotIn() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve")
            )
            let tigers = try await api.community(by: ada)
            let lions = try await api.community(by: eve)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                try await db.transaction(userId: eve.id) { connection async throws in
                    for sql: PostgresQuery in [
                        "SELECT 1 FROM communities WHERE id = \(tigers.id)",
                        "SELECT 1 FROM members WHERE community_id = \(tigers.id)",
                        "SELECT 1 FROM users WHERE id IN (\(ada.id), \(ben.id))",
                        "SELECT 1 FROM invites WHERE community_id = \(tigers.id)",
                        "SELECT 1 FROM change_log WHERE community_id = \(tigers.id)",
                        "SELECT 1 FROM audit_log WHERE community_id = \(tigers.id)",
                    ] {
                        #expect(try await Self.count(sql, on: connection) == 0, "\(sql.sql)")
                    }
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(lions.id)", on: connection) == 1)
                    let rename: PostgresQuery = "UPDATE communities SET name = 'x' WHERE id = \(tigers.id) RETURNING 1"
                    #expect(try await Self.count(rename, on: connection) == 0)
                }
            }
        }
    }

    /// The list was read for one user: a transaction that then names another user by hand
    /// sees that user's communities, never the first one's.
    @Test func theCommunitiesReadBelongToTheUserTheyWereReadFor() async throws {
        try await CoreHarness.run { api in
            let (ada, eve) = (try await api.signIn("Ada"), try await api.signIn("Eve"))
            let tigers = try await api.community(by: ada)
            let lions = try await api.community(by: eve)
            try await withTestDatabase { db in
                try await db.transaction(userId: ada.id) { connection in
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(tigers.id)", on: connection) == 1)
                    let eveId = eve.id.uuidString.lowercased()
                    try await connection.query(
                        "SELECT set_config('app.current_user_id', \(eveId), true)", logger: TestEnvironment.logger)
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(tigers.id)", on: connection) == 0)
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(lions.id)", on: connection) == 1)
                }
            }
        }
    }

    @Test func theCommunitiesFollowTheCallersOwnMembershipChangesWithinOneTransaction() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let tigers = try await api.community(by: ada)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                // Creating a community: the creator reads and administers it at once.
                let ownClub = UUID()
                try await db.transaction(userId: ben.id) { connection in
                    try await connection.query(
                        "INSERT INTO communities (id, name, created_by) VALUES (\(ownClub), 'Ben''s club', \(ben.id))",
                        logger: TestEnvironment.logger)
                    try await connection.query(
                        "INSERT INTO members (community_id, user_id, role) VALUES (\(ownClub), \(ben.id), 'admin')",
                        logger: TestEnvironment.logger)
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(ownClub)", on: connection) == 1)
                    let rename: PostgresQuery =
                        "UPDATE communities SET name = 'Ben''s' WHERE id = \(ownClub) RETURNING 1"
                    #expect(try await Self.count(rename, on: connection) == 1)
                    let invite: PostgresQuery = """
                        INSERT INTO invites (community_id, code, created_by) VALUES (\(ownClub), \(String(UUID().uuidString.prefix(8))), \(ben.id))
                        RETURNING 1
                        """
                    #expect(try await Self.count(invite, on: connection) == 1)
                }
                // Leaving, undone by a savepoint, then for good: the community goes with it.
                let tigersMembers: PostgresQuery =
                    "SELECT 1 FROM members WHERE community_id = \(tigers.id) AND user_id <> \(ben.id)"
                try await db.transaction(userId: ben.id) { connection in
                    #expect(try await Self.count(tigersMembers, on: connection) == 1)
                    try await connection.query("SAVEPOINT leaving", logger: TestEnvironment.logger)
                    let leave: PostgresQuery = """
                        UPDATE members SET left_at = NOW() WHERE user_id = \(ben.id) AND community_id = \(tigers.id)
                        RETURNING 1
                        """
                    #expect(try await Self.count(leave, on: connection) == 1)
                    #expect(try await Self.count(tigersMembers, on: connection) == 0)
                    try await connection.query("ROLLBACK TO SAVEPOINT leaving", logger: TestEnvironment.logger)
                    #expect(try await Self.count(tigersMembers, on: connection) == 1)
                    #expect(try await Self.count(leave, on: connection) == 1)
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(tigers.id)", on: connection) == 0)
                    #expect(try await Self.count(tigersMembers, on: connection) == 0)
                    #expect(try await Self.count("SELECT 1 FROM users WHERE id = \(ada.id)", on: connection) == 0)
                }
                // An admin who steps down loses the admin's rights in the same transaction.
                try await db.transaction(userId: ada.id) { connection async throws in
                    let rename: PostgresQuery = "UPDATE communities SET name = 'T' WHERE id = \(tigers.id) RETURNING 1"
                    #expect(try await Self.count(rename, on: connection) == 1)
                    let stepDown: PostgresQuery = """
                        UPDATE members SET role = 'member' WHERE user_id = \(ada.id) AND community_id = \(tigers.id)
                        RETURNING 1
                        """
                    #expect(try await Self.count(stepDown, on: connection) == 1)
                    #expect(try await Self.count(rename, on: connection) == 0)
                    #expect(
                        try await Self.count("SELECT 1 FROM invites WHERE community_id = \(tigers.id)", on: connection)
                            == 0)
                    #expect(
                        try await Self.count("SELECT 1 FROM communities WHERE id = \(tigers.id)", on: connection) == 1)
                }
            }
        }
    }
}
