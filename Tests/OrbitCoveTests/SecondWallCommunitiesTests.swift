import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
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

    /// What `read` returns, or `["refused: OCA01"]` when it was refused as acting for no account.
    static func refusedOr(_ read: () async throws -> [String]) async throws -> [String] {
        do {
            return try await read()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == Database.accountDeleted {
            return ["refused: OCA01"]
        }
    }

    static func standings(_ rows: PostgresRowSequence) async throws -> [String] {
        var standings: [String] = []
        for try await (id, deleted, role) in rows.decode((UUID, Bool, String).self) {
            standings.append("\(id) deleted: \(deleted) role: \(role)")
        }
        return standings
    }

    /// Who the pair-by-pair tests below read as, and what: Ada's Tigers (Ben and Eve members),
    /// Eve's Lions (Ben joined and left), and a community Ada made and deleted.
    static func cast(
        _ api: CoreHarness
    ) async throws -> (
        ada: CoreHarness.Person, ben: CoreHarness.Person, eve: CoreHarness.Person,
        tigers: Community, lions: Community, closed: Community
    ) {
        let (ada, ben, eve) = (try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve"))
        let tigers = try await api.community(by: ada)
        let lions = try await api.community(by: eve)
        let closed = try await api.community(by: ada)
        try await api.join(ben, tigers, invitedBy: ada)
        try await api.join(eve, tigers, invitedBy: ada)
        try await api.join(ben, lions, invitedBy: eve)
        #expect(try await api.call(.post, "/api/v1/communities/\(lions.id)/leave", as: ben).status == .noContent)
        #expect(try await api.call(.delete, "/api/v1/communities/\(closed.id)", as: ada).status == .noContent)
        return (ada, ben, eve, tigers, lions, closed)
    }

    /// A transaction entered as a user (`app_enter_as_user`, one statement since migration 0084)
    /// keeps exactly that user's current memberships, and the communities they administer, for
    /// the policies to compare against, and says whom it read them for; an account deleted, or
    /// never made, is refused. Checked against the owner's own read of `members`, for a member
    /// of two communities (one deleted) and admin of both, a member of two, one who left one, a
    /// member of none, a deleted account and an id with no account.
    @Test func theEntryKeepsExactlyTheCallersMemberships() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve, tigers, _, _) = try await Self.cast(api)
            let (dee, loner) = (try await api.signIn("Dee"), try await api.signIn("Lone"))
            try await api.join(dee, tigers, invitedBy: ada)
            try await Self.deleteForGood(dee)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await withTestDatabase { db in
                    for user in [ada.id, ben.id, eve.id, loner.id, dee.id, UUID()] {
                        let (live, expected) = try await owner.withConnection { connection in
                            var live = false
                            for try await alive in try await connection.query(
                                "SELECT deleted_at IS NULL FROM users WHERE id = \(user)",
                                logger: TestEnvironment.logger
                            ).decode(Bool.self) { live = alive }
                            var members: [UUID] = []
                            var admins: [UUID] = []
                            for try await (community, admin) in try await connection.query(
                                "SELECT community_id, role = 'admin' FROM members WHERE user_id = \(user) AND left_at IS NULL",
                                logger: TestEnvironment.logger
                            ).decode((UUID, Bool).self) {
                                members.append(community)
                                if admin { admins.append(community) }
                            }
                            return (live, Self.entered(members: members, admins: admins, of: user.lowercasedString))
                        }
                        let entered = try await Self.refusedOr {
                            try await db.transaction(userId: user) { connection in
                                let rows = try await connection.query(
                                    """
                                    SELECT current_setting('app.member_communities')::uuid[],
                                           current_setting('app.admin_communities')::uuid[],
                                           current_setting('app.communities_of'), current_setting('app.current_user_id')
                                    """, logger: TestEnvironment.logger)
                                var entered: [String] = []
                                for try await (members, admins, of, current) in rows.decode(
                                    ([UUID], [UUID], String, String).self)
                                {
                                    entered = Self.entered(members: members, admins: admins, of: of)
                                    #expect(current == of)
                                }
                                return entered
                            }
                        }
                        #expect(entered == (live ? expected : ["refused: OCA01"]), "user \(user)")
                        // What the comparison needs to mean something: Ada administers her two,
                        // Dee's account is deleted, and the last id has none.
                        if user == ada.id { #expect(expected.count == 6) }
                        if user == dee.id || ![ada.id, ben.id, eve.id, loner.id].contains(user) { #expect(!live) }
                    }
                }
            }
        }
    }

    /// Marks `person`'s account deleted, as the retention jobs do after a deletion's grace period
    /// (asked for through the API, it is only requested), leaving their memberships as they are.
    static func deleteForGood(_ person: CoreHarness.Person) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            try await owner.withConnection { connection in
                try await connection.run(
                    "UPDATE users SET deleted_at = now() WHERE id = \(person.id)", logger: TestEnvironment.logger)
            }
        }
    }

    static func entered(members: [UUID], admins: [UUID], of user: String) -> [String] {
        members.map(\.lowercasedString).sorted() + ["admin:"] + admins.map(\.lowercasedString).sorted() + [
            "of: \(user)"
        ]
    }

    /// The gate reads a caller's standing outside a transaction, through
    /// `app_community_standing` (migration 0028): for every pair of user and community it must
    /// answer exactly what a transaction entered as that user sees of the community and of the
    /// user's own membership row: a member, one who left, an outsider, a deleted community, an
    /// account deleted while still a member, an id with no account.
    @Test func theGatesStandingIsWhatTheWallShows() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve, tigers, lions, closed) = try await Self.cast(api)
            // Found by a hostile probe: an account deleted while its memberships were still there
            // was refused by every transaction but answered by the gate's standing (migration 0081
            // looked the account up only when no membership was found). Account deletion ends the
            // memberships in the same transaction, so only an account deleted some other way was
            // there to find.
            let dee = try await api.signIn("Dee")
            try await api.join(dee, tigers, invitedBy: ada)
            try await Self.deleteForGood(dee)
            try await withTestDatabase { db in
                // An id with no account: both refuse it (migration 0081).
                let nobody = UUID()
                for user in [ada.id, ben.id, eve.id, dee.id, nobody] {
                    for community in [tigers.id, lions.id, closed.id, UUID()] {
                        let walled = try await Self.refusedOr {
                            try await db.transaction(userId: user) { connection in
                                let rows = try await connection.query(
                                    """
                                    SELECT c.id, c.deleted_at IS NOT NULL, m.role::text FROM communities c
                                    JOIN members m ON m.community_id = c.id AND m.user_id = \(user) AND m.left_at IS NULL
                                    WHERE c.id = \(community)
                                    """, logger: TestEnvironment.logger)
                                return try await Self.standings(rows)
                            }
                        }
                        let standing = try await Self.refusedOr {
                            try await db.withConnection { connection in
                                let rows = try await connection.query(
                                    """
                                    SELECT id, deleted_at IS NOT NULL, role FROM app_community_standing(\(community), \(user))
                                    """, logger: TestEnvironment.logger)
                                return try await Self.standings(rows)
                            }
                        }
                        #expect(standing == walled, "user \(user), community \(community)")
                        if user == nobody || user == dee.id { #expect(walled == ["refused: OCA01"]) }
                    }
                }
                // The pairs that must be visible are: Ada in both of hers (one deleted), Ben and
                // Eve in the Tigers, Eve in the Lions.
                let visible = try await db.withConnection { connection in
                    let rows = try await connection.query(
                        """
                        SELECT s.id FROM unnest(\([ada.id, ben.id, eve.id])::uuid[]) AS u(id),
                             unnest(\([tigers.id, lions.id, closed.id])::uuid[]) AS c(id),
                             LATERAL app_community_standing(c.id, u.id) AS s
                        """, logger: TestEnvironment.logger)
                    return try await rows.collect()
                }
                #expect(visible.count == 5)
            }
        }
    }

    /// The members page is one statement that enters as its reader (`app_members_page`,
    /// migration 0083): for every reader and community, first page and after a cursor, it must
    /// answer exactly what a transaction entered as that reader reads with the same query, leave
    /// nothing of the reader on the connection, and refuse an absent reader or half a cursor.
    @Test func theMembersPageIsWhatTheWallShows() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve, tigers, lions, closed) = try await Self.cast(api)
            try await withTestDatabase { db in
                let nobody = UUID()
                var seen = 0
                for user in [ada.id, ben.id, eve.id, nobody] {
                    for community in [tigers.id, lions.id, closed.id, UUID()] {
                        let walled = try await Self.refusedOr {
                            try await db.transaction(userId: user) { connection in
                                try await Self.members(
                                    try await connection.query(
                                        """
                                        SELECT m.user_id, m.joined_at, m.id FROM members m
                                        JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
                                        WHERE m.community_id = \(community) AND m.left_at IS NULL
                                        ORDER BY m.joined_at, m.id
                                        """, logger: TestEnvironment.logger))
                            }
                        }
                        let page = try await Self.refusedOr {
                            try await db.withConnection { connection in
                                let members = try await Self.members(
                                    try await connection.query(
                                        """
                                        SELECT user_id, joined_at, id
                                        FROM app_members_page(\(user), \(community), NULL, NULL, 50)
                                        """, logger: TestEnvironment.logger))
                                // The entry ended with the statement.
                                let left = try await connection.query(
                                    "SELECT coalesce(current_setting('app.current_user_id', true), '')",
                                    logger: TestEnvironment.logger
                                ).collect().first?.decode(String.self)
                                #expect(left == "")
                                return members
                            }
                        }
                        #expect(page == walled, "user \(user), community \(community)")
                        if user == nobody { #expect(walled == ["refused: OCA01"]) }
                        if user != nobody { seen += walled.count }
                        // After the first member's cursor: the rest, in the same order.
                        guard walled.count > 1 else { continue }
                        let rest = try await db.withConnection { connection in
                            try await Self.members(
                                try await connection.query(
                                    """
                                    SELECT rest.user_id, rest.joined_at, rest.id
                                    FROM app_members_page(\(user), \(community), NULL, NULL, 1) AS first,
                                         LATERAL app_members_page(\(user), \(community), first.joined_at, first.id, 50) AS rest
                                    """, logger: TestEnvironment.logger))
                        }
                        #expect(rest == Array(walled.dropFirst()))
                    }
                }
                // The Tigers' three to each of them, the Lions' one to Eve, and the deleted
                // community's one to Ada, who may still restore it.
                #expect(seen == 11)
                let page: (UUID) -> PostgresQuery = { viewer in
                    "SELECT * FROM app_members_page(\(viewer), \(tigers.id), NULL, NULL, 5)"
                }
                // Outside a transaction, and inside one: as the system, or entered as another
                // user, it refuses; inside the viewer's own it reads.
                let refusals: [(String, Database.AccessScope?, PostgresQuery, String?)] = [
                    ("no reader", nil, "SELECT * FROM app_members_page(NULL, \(tigers.id), NULL, NULL, 5)", "22004"),
                    (
                        "no size", nil, "SELECT * FROM app_members_page(\(ada.id), \(tigers.id), NULL, NULL, NULL)",
                        "22004"
                    ),
                    (
                        "half a cursor", nil, "SELECT * FROM app_members_page(\(ada.id), \(tigers.id), now(), NULL, 5)",
                        "22023"
                    ),
                    ("as the system", .system, page(ada.id), "42501"),
                    ("entered as another", .user(ben.id), page(ada.id), "42501"),
                    ("entered as the viewer", .user(ada.id), page(ada.id), nil),
                ]
                for (name, scope, sql, state) in refusals {
                    let refused: String?
                    do {
                        let rows =
                            if let scope {
                                try await db.transaction(scope: scope) { connection in
                                    try await connection.query(sql, logger: TestEnvironment.logger).collect()
                                }
                            } else {
                                try await db.withConnection { connection in
                                    try await connection.query(sql, logger: TestEnvironment.logger).collect()
                                }
                            }
                        #expect(rows.count == 3, "\(name)")
                        refused = nil
                    } catch let error as PSQLError {
                        refused = error.serverInfo?[.sqlState]
                    }
                    #expect(refused == state, "\(name)")
                }
            }
        }
    }

    static func members(_ rows: PostgresRowSequence) async throws -> [String] {
        var members: [String] = []
        for try await (user, joined, id) in rows.decode((UUID, Date, UUID).self) {
            members.append("\(user) \(joined.timeIntervalSince1970) \(id)")
        }
        return members
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
                    try await connection.run(
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
                    try await connection.run(
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
                    try await connection.run("SAVEPOINT leaving", logger: TestEnvironment.logger)
                    let leave: PostgresQuery = """
                        UPDATE members SET left_at = NOW() WHERE user_id = \(ben.id) AND community_id = \(tigers.id)
                        RETURNING 1
                        """
                    #expect(try await Self.count(leave, on: connection) == 1)
                    #expect(try await Self.count(tigersMembers, on: connection) == 0)
                    try await connection.run("ROLLBACK TO SAVEPOINT leaving", logger: TestEnvironment.logger)
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
