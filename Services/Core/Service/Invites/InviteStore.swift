import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Invite codes: six characters from an alphabet without look-alikes (no 0/O, 1/I/L), globally
/// unique, optionally limited in uses and time. Admins manage them; anyone signed in who
/// holds one may preview its community and join. Looking a code up crosses communities by
/// nature, so those two run as the system, and only they do.
struct InviteStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    let logger: Logger

    static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    static let codeLength = 6

    static func generateCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<codeLength).map { _ in alphabet.randomElement(using: &generator) ?? "A" })
    }

    /// A code as typed (any case, spaces or dashes) in canonical form, or `nil` if it cannot be one.
    static func normalise(_ typed: String) -> String? {
        let code = typed.uppercased().filter { $0 != " " && $0 != "-" }
        guard code.count == codeLength, code.allSatisfy(alphabet.contains) else { return nil }
        return code
    }

    static let notFound = APIError.notFound("INVITE_NOT_FOUND", "No such invite code")
    static let removedMember = APIError(
        .forbidden, code: "REMOVED_FROM_COMMUNITY",
        message: "An admin removed you from this community; an admin has to let you back in first")

    func create(
        in granted: CommunityGate.Granted, maxUses: Int?, expiresInHours: Int?, request: RequestFacts
    ) async throws -> Invite {
        let (communityId, userId) = (granted.communityId, granted.userId)
        // 31^6 codes: a collision is rare, and then another draw settles it.
        for _ in 0..<5 {
            let code = Self.generateCode()
            let id = UUID.random()
            let created = try await writes.change(in: communityId, by: userId, request: request) { change, connection in
                let inserted = try await connection.changedRows(
                    """
                    INSERT INTO invites (id, community_id, code, created_by, max_uses, uses_remaining, expires_at)
                    VALUES (\(id), \(communityId), \(code), \(userId), \(maxUses), \(maxUses),
                            NOW() + make_interval(hours => \(expiresInHours)::int))
                    ON CONFLICT (code) DO NOTHING
                    RETURNING 1
                    """, logger: logger)
                change.touched(inserted)
                change.audit(
                    "invite.created", target: ("invite", id),
                    metadata: ["maxUses": maxUses.map { .number(Double($0)) } ?? .null])
                return inserted == 1
            }
            if created, let invite = try await invite(id, of: communityId, viewer: userId) { return invite }
        }
        throw APIError.internalError
    }

    static let order = Keyset(.newestFirst)

    func invites(of communityId: UUID, viewer: UUID, page: PageRequest) async throws -> [(Invite, PageCursor)] {
        try await database.transaction(userId: viewer) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites
                WHERE community_id = \(communityId)
                \(page: page, in: Self.order)
                """, logger: logger)
            var invites: [(Invite, PageCursor)] = []
            for try await row in rows {
                let invite = try Self.read(row)
                invites.append((invite, PageCursor(createdAt: invite.createdAt, id: invite.id)))
            }
            return invites
        }
    }

    func invite(_ id: UUID, of communityId: UUID, viewer: UUID) async throws -> Invite? {
        try await database.transaction(userId: viewer) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites WHERE community_id = \(communityId) AND id = \(id)
                """, logger: logger)
            for try await row in rows { return try Self.read(row) }
            return nil
        }
    }

    /// An invite as ``read(_:)`` reads it (a constant, written with `\(unescaped:)`): its
    /// status is judged by the database's clock.
    static let columns = "id, code, created_by, max_uses, use_count, expires_at, revoked_at, created_at, NOW() AS now"

    static func read(_ row: PostgresRow) throws -> Invite {
        var cells = RowReader(row)
        let id: UUID = try cells.next("id")
        let code: String = try cells.next("code")
        let createdBy: UUID = try cells.next("created_by")
        let maxUses: Int? = try cells.next("max_uses")
        let useCount: Int = try cells.next("use_count")
        let expiresAt: Date? = try cells.next("expires_at")
        let revokedAt: Date? = try cells.next("revoked_at")
        let createdAt: Date = try cells.next("created_at")
        let now: Date = try cells.next("now")
        return Invite(
            id: id, code: code, createdBy: createdBy, maxUses: maxUses, useCount: useCount, expiresAt: expiresAt,
            revokedAt: revokedAt,
            status: Invite.status(
                revokedAt: revokedAt, expiresAt: expiresAt, maxUses: maxUses, useCount: useCount, now: now),
            createdAt: createdAt)
    }

    func revoke(_ inviteId: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let communityId = granted.communityId
        try await writes.change(in: communityId, by: granted.userId, request: request) { change, connection in
            let revoked = try await connection.changedRows(
                """
                UPDATE invites SET revoked_at = coalesce(revoked_at, NOW())
                WHERE id = \(inviteId) AND community_id = \(communityId)
                RETURNING 1
                """, logger: logger)
            guard revoked == 1 else { throw Self.notFound }
            change.touched(revoked)
            change.audit("invite.revoked", target: ("invite", inviteId))
        }
    }

    /// The community behind a usable code.
    func preview(_ code: String, for userId: UUID) async throws -> InvitePreview {
        try await database.transaction(scope: .system) { connection in
            // Run as the system (the community is not the caller's yet), so the entry's check
            // of the account is made here.
            try await Self.requireAccount(userId, on: connection, logger: logger)
            let invite = try await find(code, on: connection, lock: false)
            try invite.requireActive()
            return InvitePreview(
                communityId: invite.communityId, name: invite.communityName, iconUrl: invite.iconUrl,
                memberCount: invite.memberCount, expiresAt: invite.expiresAt)
        }
    }

    /// `401 ACCOUNT_DELETED` unless `userId` has an account, not deleted: what
    /// `app_enter_as_user` checks, for the work run as the system on a user's behalf. With
    /// `holding`, the row is held (`FOR SHARE`) until the transaction ends.
    static func requireAccount(
        _ userId: UUID, holding: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws {
        var live = false
        for try await alive in try await connection.query(
            """
            SELECT deleted_at IS NULL FROM users WHERE id = \(userId)
            \(unescaped: holding ? "FOR SHARE" : "")
            """, logger: logger
        ).decode(Bool.self) {
            live = alive
        }
        guard live else { throw APIError.accountDeleted }
    }

    struct Joined: Sendable {
        var communityId: UUID
        /// False when the user already was a member (nothing changed, no use spent).
        var isNew: Bool
    }

    /// Spends one use of `code` to make `userId` a member. `expectedCommunity` is the
    /// community in the path of `POST /communities/{id}/join`: a code of another community
    /// is unknown there.
    func redeem(_ code: String, expectedCommunity: UUID?, by userId: UUID, request: RequestFacts) async throws -> Joined
    {
        try await writes.change(in: nil, by: userId, request: request, scope: .system) { change, connection in
            // Run as the system, so the entry's check of the account (migrations 0076, 0081) is
            // made here, holding the row: the retention job that deletes the account skips it
            // until this commits, and then finds the membership to end.
            try await Self.requireAccount(userId, holding: true, on: connection, logger: logger)
            let invite = try await find(code, on: connection, lock: true)
            if let expectedCommunity, expectedCommunity != invite.communityId { throw Self.notFound }
            change.community = invite.communityId
            try await MemberStore.lock(invite.communityId, on: connection, logger: logger)
            // A member who follows a link again is simply there, whatever became of the code.
            let member = try await connection.query(
                """
                SELECT 1 FROM members WHERE community_id = \(invite.communityId) AND user_id = \(userId) AND left_at IS NULL
                """, logger: logger)
            for try await _ in member { return Joined(communityId: invite.communityId, isNew: false) }
            // Someone an admin removed needs an admin to let them back, not just any live code.
            let removed = try await connection.query(
                """
                SELECT 1 FROM members
                WHERE community_id = \(invite.communityId) AND user_id = \(userId) AND removed_by IS NOT NULL
                """, logger: logger)
            for try await _ in removed { throw Self.removedMember }
            try invite.requireActive()
            let rows = try await connection.query(
                """
                INSERT INTO members (community_id, user_id, role, invited_by)
                VALUES (\(invite.communityId), \(userId), 'member', \(invite.createdBy))
                ON CONFLICT (community_id, user_id) DO UPDATE
                    SET left_at = NULL, removed_by = NULL, role = 'member', joined_at = NOW(),
                        invited_by = EXCLUDED.invited_by
                    WHERE members.left_at IS NOT NULL
                RETURNING (SELECT display_name FROM users WHERE id = \(userId))
                """, logger: logger)
            var joined: [String] = []
            for try await name in rows.decode(String.self) { joined.append(name) }
            guard let displayName = joined.first else { return Joined(communityId: invite.communityId, isNew: false) }
            change.touched(joined.count)
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE invites SET use_count = use_count + 1, uses_remaining = uses_remaining - 1
                    WHERE id = \(invite.id)
                    RETURNING 1
                    """, logger: logger))
            change.audit(
                "member.added", target: ("user", userId),
                metadata: [
                    "inviteId": .string(invite.id.lowercasedString),
                    "invitedBy": .string(invite.createdBy.lowercasedString),
                ])
            change.announce(
                MemberJoined(
                    communityId: invite.communityId, communityName: invite.communityName, userId: userId,
                    displayName: displayName))
            change.invalidatesCache()
            return Joined(communityId: invite.communityId, isNew: true)
        }
    }

    private struct Found {
        var id: UUID
        var communityId: UUID
        var createdBy: UUID
        var expiresAt: Date?
        var status: Invite.Status
        var communityName: String
        var iconUrl: String?
        var memberCount: Int

        /// The reason a code cannot be used now, as the client's error.
        func requireActive() throws {
            switch status {
            case .active: return
            case .expired: throw APIError(.gone, code: "INVITE_EXPIRED", message: "This invite code has expired")
            case .exhausted:
                throw APIError(.gone, code: "INVITE_EXHAUSTED", message: "This invite code has been used up")
            case .revoked: throw APIError(.gone, code: "INVITE_REVOKED", message: "This invite code was withdrawn")
            }
        }
    }

    /// The invite behind `code` (of a community that is not deleted), in whatever state.
    private func find(_ code: String, on connection: PostgresConnection, lock: Bool) async throws -> Found {
        guard let code = Self.normalise(code) else { throw Self.notFound }
        let rows = try await connection.query(
            """
            SELECT i.id, i.community_id, i.created_by, i.max_uses, i.use_count, i.expires_at, i.revoked_at, NOW() AS now,
                   c.name, c.icon_url, c.member_count
            FROM invites i JOIN communities c ON c.id = i.community_id
            WHERE i.code = \(code) AND c.deleted_at IS NULL
            \(unescaped: lock ? "FOR UPDATE OF i" : "")
            """, logger: logger)
        for try await row in rows {
            var cells = RowReader(row)
            let id: UUID = try cells.next("id")
            let communityId: UUID = try cells.next("community_id")
            let createdBy: UUID = try cells.next("created_by")
            let maxUses: Int? = try cells.next("max_uses")
            let useCount: Int = try cells.next("use_count")
            let expiresAt: Date? = try cells.next("expires_at")
            let revokedAt: Date? = try cells.next("revoked_at")
            let now: Date = try cells.next("now")
            return Found(
                id: id, communityId: communityId, createdBy: createdBy, expiresAt: expiresAt,
                status: Invite.status(
                    revokedAt: revokedAt, expiresAt: expiresAt, maxUses: maxUses, useCount: useCount, now: now),
                communityName: try cells.next("name"), iconUrl: try cells.next("icon_url"),
                memberCount: try cells.next("member_count"))
        }
        throw Self.notFound
    }
}
