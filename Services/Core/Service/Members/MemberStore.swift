import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Membership: listing, roles, removal and leaving. A community always keeps an admin, and
/// its creator cannot be demoted or removed by anyone else. Changes to one community's
/// membership are serialised (an advisory lock per community), so two admins demoting each
/// other at once cannot leave it without one.
struct MemberStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    /// Withdraws the answers of whoever leaves or is removed.
    let departed: DepartedAnswers
    let logger: Logger

    /// One statement that enters as the viewer itself (`app_members_page`, migration 0083): one
    /// round trip where a transaction entered as the viewer takes four. Row-level security holds
    /// the page to the viewer's communities, as it would in that transaction.
    func members(
        of communityId: UUID, viewer: UUID, page: PageRequest
    ) async throws -> [(CommunityMember, PageCursor)] {
        let statement = MembersPage(
            viewer: viewer, communityId: communityId, after: page.cursor?.exactCreatedAt, afterId: page.cursor?.id,
            limit: page.fetchLimit)
        return try await database.withConnection { connection in
            var members: [(CommunityMember, PageCursor)] = []
            for try await row in try await connection.query(statement, logger: logger) {
                members.append(try Self.read(row))
            }
            return members
        }
    }

    func changeRole(
        of target: UUID, to role: MemberRole, in granted: CommunityGate.Granted, request: RequestFacts
    )
        async throws -> CommunityMember
    {
        let (community, actor) = (granted.record, granted.userId)
        return try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            try await Self.lock(community.id, on: connection, logger: logger)
            let current = try await member(target, of: community.id, on: connection)
            // Others may not demote the creator; one who stepped down may be made admin again.
            if target == community.createdBy && actor != community.createdBy && role != .admin {
                throw Self.creatorProtected
            }
            if current.role == role { return current }
            if current.role == .admin, try await counts(community.id, on: connection).admins <= 1 {
                throw Self.lastAdmin
            }
            // The member was just read under the lock: touching nothing means the second wall
            // refused the actor (demoted since the gate looked), and they hear so.
            let updated = try await connection.changedRows(
                """
                UPDATE members SET role = \(role.rawValue)::member_role
                WHERE community_id = \(community.id) AND user_id = \(target) AND left_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard updated == 1 else { throw APIError.forbidden }
            change.touched(updated)
            change.audit(
                "member.role_changed", target: ("user", target),
                metadata: ["from": .string(current.role.rawValue), "to": .string(role.rawValue)])
            change.announce(
                MemberRoleChanged(
                    communityId: community.id, communityName: community.name, userId: target, role: role,
                    changedBy: actor))
            change.invalidatesCache()
            var changed = current
            changed.role = role
            return changed
        }
    }

    func remove(_ target: UUID, from granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let (community, actor) = (granted.record, granted.userId)
        guard target != actor else {
            throw APIError(
                .conflict, code: "CANNOT_REMOVE_SELF", message: "To leave a community, use its leave action")
        }
        try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            try await Self.lock(community.id, on: connection, logger: logger)
            _ = try await member(target, of: community.id, on: connection)
            if target == community.createdBy { throw Self.creatorProtected }
            let removed = try await connection.changedRows(
                """
                UPDATE members SET left_at = NOW(), removed_by = \(actor)
                WHERE community_id = \(community.id) AND user_id = \(target) AND left_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard removed == 1 else { throw APIError.forbidden }
            change.touched(removed)
            try await departed.withdraw(
                target, from: community.id, communityName: community.name, change: &change, on: connection)
            change.audit("member.removed", target: ("user", target))
            change.announce(
                MemberRemoved(
                    communityId: community.id, communityName: community.name, userId: target, removedBy: actor))
            change.invalidatesCache()
        }
    }

    /// Lets a removed member back: they may join again with an invite code. Nothing happens
    /// (and nothing is recorded) for someone who was not removed.
    func readmit(_ target: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let community = granted.record
        try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            try await Self.lock(community.id, on: connection, logger: logger)
            let readmitted = try await connection.changedRows(
                """
                UPDATE members SET removed_by = NULL
                WHERE community_id = \(community.id) AND user_id = \(target) AND left_at IS NOT NULL
                  AND removed_by IS NOT NULL
                RETURNING 1
                """, logger: logger)
            guard readmitted == 1 else { throw Self.notRemoved }
            change.touched(readmitted)
            change.audit("member.readmitted", target: ("user", target))
        }
    }

    func leave(_ granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let (community, user) = (granted.record, granted.userId)
        try await writes.change(in: community.id, by: user, request: request) { change, connection in
            try await Self.lock(community.id, on: connection, logger: logger)
            let current = try await member(user, of: community.id, on: connection)
            if current.role == .admin {
                let (admins, members) = try await counts(community.id, on: connection)
                if admins <= 1 {
                    throw members > 1
                        ? Self.lastAdmin
                        : APIError(
                            .conflict, code: "LAST_MEMBER",
                            message: "You are the only member; delete the community instead of leaving it")
                }
            }
            // First, while the member may still read the events their answers name.
            try await departed.withdraw(
                user, from: community.id, communityName: community.name, change: &change, on: connection)
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE members SET left_at = NOW()
                    WHERE community_id = \(community.id) AND user_id = \(user) AND left_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            change.audit("member.left", target: ("user", user))
            change.announce(
                MemberLeft(
                    communityId: community.id, communityName: community.name, userId: user,
                    displayName: current.displayName))
            change.invalidatesCache()
        }
    }

    /// A member row as ``read(_:)`` reads it (constants, written with `\(unescaped:)`). The
    /// members page returns the same columns from `app_members_page` (migration 0083): a column
    /// added here needs a new version of that function too.
    static let columns = """
        m.user_id, u.display_name, u.avatar_url, m.nickname, m.role::text, m.user_id = c.created_by AS is_creator,
        m.joined_at, m.id
        """
    static let tables = """
        FROM members m JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
        """

    /// The member, and its position in the members' order (``MembersPage``).
    static func read(_ row: PostgresRow) throws -> (CommunityMember, PageCursor) {
        var cells = RowReader(row)
        let userId: UUID = try cells.next("user_id")
        let displayName: String = try cells.next("display_name")
        let avatarUrl: String? = try cells.next("avatar_url")
        let nickname: String? = try cells.next("nickname")
        let role: String = try cells.next("role")
        let isCreator: Bool = try cells.next("is_creator")
        let joinedAt: Date = try cells.next("joined_at")
        let id: UUID = try cells.next("id")
        let member = CommunityMember(
            userId: userId, displayName: displayName, avatarUrl: avatarUrl, nickname: nickname,
            role: MemberRole(rawValue: role) ?? .member, isCreator: isCreator, joinedAt: joinedAt)
        return (member, PageCursor(createdAt: joinedAt, id: id))
    }

    static let lastAdmin = APIError(
        .conflict, code: "LAST_ADMIN", message: "A community needs an admin; make someone else an admin first")
    static let creatorProtected = APIError(
        .forbidden, code: "CREATOR_PROTECTED", message: "Only the community's creator can change their own membership")
    static let notRemoved = APIError.notFound("MEMBER_NOT_REMOVED", "Nobody by that id was removed from this community")
    static let memberNotFound = APIError.notFound("MEMBER_NOT_FOUND", "No such member in this community")

    /// Serialises membership changes of one community until the transaction ends.
    static func lock(_ communityId: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        let key = "members:\(communityId.lowercasedString)"
        try await connection.run("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
    }

    /// Holds the community's membership as it is until the transaction ends: ``lock(_:on:logger:)``,
    /// which every join, leave and removal takes, waits for it, while other holders do not wait
    /// for each other. A write that checks who is a member takes it before the check, so no one
    /// leaves between the check and the commit. Taken after the ledger's lock; nothing that
    /// holds the membership lock takes that one.
    static func hold(_ communityId: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        let key = "members:\(communityId.lowercasedString)"
        try await connection.run("SELECT pg_advisory_xact_lock_shared(hashtextextended(\(key), 0))", logger: logger)
    }

    private func member(
        _ userId: UUID, of communityId: UUID, on connection: PostgresConnection
    ) async throws
        -> CommunityMember
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) \(unescaped: Self.tables)
            WHERE m.community_id = \(communityId) AND m.user_id = \(userId) AND m.left_at IS NULL
            """, logger: logger)
        for try await row in rows { return try Self.read(row).0 }
        throw Self.memberNotFound
    }

    /// How many admins and members the community has now.
    private func counts(
        _ communityId: UUID, on connection: PostgresConnection
    ) async throws
        -> (admins: Int, members: Int)
    {
        let rows = try await connection.query(
            """
            SELECT count(*) FILTER (WHERE role = 'admin')::int, count(*)::int FROM members
            WHERE community_id = \(communityId) AND left_at IS NULL
            """, logger: logger)
        for try await counts in rows.decode((Int, Int).self) { return counts }
        return (0, 0)
    }
}

/// A page of members as the viewer sees them, oldest first (by `joined_at`, then `id`), after the
/// cursor's member if there is one: one statement that enters as the viewer (migration 0083),
/// prepared once per connection (the list every member opens).
struct MembersPage: PreparedRows {
    static let sql = "SELECT * FROM app_members_page($1, $2, $3::timestamptz, $4::uuid, $5::integer)"
    var viewer: UUID
    var communityId: UUID
    var after: ExactTimestamp?
    var afterId: UUID?
    var limit: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(viewer)
        bindings.append(communityId)
        bindings.append(after)
        bindings.append(afterId)
        bindings.append(limit)
        return bindings
    }
}

extension MemberStore {
    /// Which of `ids` are current members of `communityId` (or were, `includingFormer`), as the
    /// transaction's reader sees them: the check behind mentions, payers, split members and the
    /// parties to a settlement.
    static func currentMembers(
        _ ids: [UUID], in communityId: UUID, includingFormer: Bool = false, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Set<UUID> {
        var members: Set<UUID> = []
        for try await id in try await connection.query(
            """
            SELECT user_id FROM members
            WHERE community_id = \(communityId) AND (left_at IS NULL OR \(includingFormer)) AND user_id = ANY(\(ids))
            """, logger: logger
        ).decode(UUID.self) {
            members.insert(id)
        }
        return members
    }
}
