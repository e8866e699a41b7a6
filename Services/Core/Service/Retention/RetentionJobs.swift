import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import ServiceLifecycle

/// How long deleted things can come back, and when the retention jobs remove them for good.
enum Retention {
    static let accountGrace = UserRows.accountGrace
    static let communityGrace = "30 days"
    static let idempotencyKeys = "24 hours"
    static let expiredInvites = "7 days"
    static let changeLog = "90 days"
    /// The seed's retention table: audit entries are kept two years.
    static let auditLog = "2 years"
    /// Refresh tokens, after revocation or expiry (spent tokens stay until then, for reuse detection).
    static let deadRefreshTokens = "30 days"
    /// The seed's retention table: deleted posts and comments are purged after 30 days.
    static let deletedContent = "30 days"
}

/// The core API's half of the seed's data lifecycle, every few minutes in whichever replica
/// takes the lock first: accounts whose deletion grace period ended are anonymised (their
/// communities keep an admin), communities deleted more than 30 days ago are purged, and
/// idempotency keys, long-expired invites, old change-log rows, audit entries older than two
/// years, refresh tokens revoked or expired more than 30 days ago, and posts and comments
/// deleted more than 30 days ago (a post with its comments, reactions and votes) are dropped.
///
/// An account's deletion is a change like any other: it goes through
/// ``CommunityWrites/accountChange(of:request:scope:_:)``, one ``ChangeRecord`` per community
/// the account leaves, so each of them is audited, announced (`member.left`, and
/// `member.role_changed` or `community.updated` when the last admin goes), synced and
/// uncached exactly as the same change made through the API would be.
struct RetentionJobs: Service {
    let database: Database
    let writes: CommunityWrites
    let interval: Duration
    /// Withdraws the answers of a deleted account's memberships.
    let departed: DepartedAnswers
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: interval, failure: "retention jobs failed", logger: logger) {
            try await runOnce()
        }
    }

    struct Report: Equatable {
        var accountsDeleted = 0
        var communitiesPurged = 0
    }

    @discardableResult
    func runOnce() async throws -> Report {
        var report = Report()
        for userId in try await accountsDue() where try await deleteAccount(userId) {
            report.accountsDeleted += 1
        }
        report.communitiesPurged = try await purge()
        return report
    }

    private func accountsDue() async throws -> [UUID] {
        try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                """
                SELECT id FROM users
                WHERE deleted_at IS NULL AND deletion_requested_at < NOW() - \(Retention.accountGrace)::interval
                ORDER BY deletion_requested_at LIMIT 100
                """, logger: logger)
            var ids: [UUID] = []
            for try await id in rows.decode(UUID.self) { ids.append(id) }
            return ids
        }
    }

    /// Anonymises one account; false when another replica or a cancellation settled it first.
    private func deleteAccount(_ userId: UUID) async throws -> Bool {
        try await writes.accountChange(of: userId, request: RequestFacts(), scope: .system) { account, connection in
            // Another replica, or a cancellation that just came in, may have settled it.
            let due = try await connection.query(
                """
                SELECT display_name FROM users WHERE id = \(userId) AND deleted_at IS NULL
                  AND deletion_requested_at < NOW() - \(Retention.accountGrace)::interval
                FOR NO KEY UPDATE SKIP LOCKED
                """, logger: logger)
            var displayName: String?
            for try await name in due.decode(String.self) { displayName = name }
            guard let displayName else { return false }

            // In one order, so two replicas deleting two accounts of the same communities take
            // the communities' locks alike and never wait for each other.
            var memberships: [Membership] = []
            for try await row in try await connection.query(
                """
                SELECT m.community_id, c.name, m.role::text FROM members m JOIN communities c ON c.id = m.community_id
                WHERE m.user_id = \(userId) AND m.left_at IS NULL
                ORDER BY m.community_id
                """, logger: logger
            ) {
                let columns = row.makeRandomAccess()
                memberships.append(
                    Membership(
                        communityId: try columns["community_id"].decode(UUID.self),
                        communityName: try columns["name"].decode(String.self),
                        isAdmin: try columns["role"].decode(String.self) == MemberRole.admin.rawValue))
            }
            for membership in memberships {
                account.include(try await leave(membership, userId: userId, displayName: displayName, on: connection))
            }
            try await connection.run("DELETE FROM family_members WHERE user_id = \(userId)", logger: logger)
            // Her ways of being paid, in every community she was ever in (balances show them as
            // pay links to those she is owed by), and her phones' push tokens (migration 0079).
            try await connection.run(
                "UPDATE members SET payment_handles = '{}' WHERE user_id = \(userId) AND payment_handles <> '{}'",
                logger: logger)
            try await connection.run("DELETE FROM devices WHERE user_id = \(userId)", logger: logger)
            try await connection.run(
                "UPDATE calendar_feeds SET revoked_at = NOW() WHERE user_id = \(userId) AND revoked_at IS NULL",
                logger: logger)
            try await connection.run(
                """
                UPDATE refresh_tokens SET revoked_at = coalesce(revoked_at, NOW()),
                    revoked_reason = coalesce(revoked_reason, 'account_deleted')
                WHERE user_id = \(userId)
                """, logger: logger)
            let tag = userId.lowercasedString
            // The avatar upload goes with the account (its files with the next media sweep).
            try await connection.run(
                """
                UPDATE media SET deleted_at = now()
                WHERE uploaded_by = \(userId) AND purpose = 'avatar' AND deleted_at IS NULL
                """, logger: logger)
            account.touched(
                try await connection.changedRows(
                    """
                    UPDATE users SET display_name = '[Deleted User]', email = \("deleted-\(tag)@deleted.invalid"),
                        apple_id = \("deleted:\(tag)"), avatar_url = NULL, avatar_media_id = NULL, deleted_at = NOW(), updated_at = NOW()
                    WHERE id = \(userId)
                    RETURNING 1
                    """, logger: logger))
            account.audit("account.deleted", metadata: ["communitiesLeft": .number(Double(memberships.count))])
            logger.info("account deleted after its grace period", metadata: ["userId": .string(tag)])
            return true
        }
    }

    private struct Membership {
        var communityId: UUID
        var communityName: String
        var isAdmin: Bool
    }

    /// The deleted account's membership of one community ends, as leaving through the API
    /// would end it; the community keeps an admin (``keepAnAdmin``).
    private func leave(
        _ membership: Membership, userId: UUID, displayName: String, on connection: PostgresConnection
    ) async throws -> ChangeRecord {
        let communityId = membership.communityId
        var change = ChangeRecord(community: communityId)
        try await MemberStore.lock(communityId, on: connection, logger: logger)
        if membership.isAdmin { try await keepAnAdmin(membership, leaving: userId, change: &change, on: connection) }
        change.touched(
            try await connection.changedRows(
                """
                UPDATE members SET left_at = NOW()
                WHERE community_id = \(communityId) AND user_id = \(userId) AND left_at IS NULL
                RETURNING 1
                """, logger: logger))
        try await departed.withdraw(
            userId, from: communityId, communityName: membership.communityName, change: &change, on: connection)
        // Each community's admins see the member go in their own audit log.
        change.audit("member.account_deleted", target: ("user", userId))
        change.announce(
            MemberLeft(
                communityId: communityId, communityName: membership.communityName, userId: userId,
                displayName: displayName))
        change.invalidatesCache()
        return change
    }

    /// When the last admin goes, the longest-standing member becomes admin; with nobody
    /// left, the community is deleted (and restorable for 30 days like any other).
    private func keepAnAdmin(
        _ membership: Membership, leaving userId: UUID, change: inout ChangeRecord, on connection: PostgresConnection
    ) async throws {
        let communityId = membership.communityId
        let others = try await connection.query(
            """
            SELECT user_id, role = 'admin' AS is_admin FROM members
            WHERE community_id = \(communityId) AND left_at IS NULL AND user_id <> \(userId)
            ORDER BY (role = 'admin') DESC, joined_at, id
            LIMIT 1
            """, logger: logger)
        var successor: (userId: UUID, isAdmin: Bool)?
        for try await row in others {
            let columns = row.makeRandomAccess()
            successor = (try columns["user_id"].decode(UUID.self), try columns["is_admin"].decode(Bool.self))
        }
        switch successor {
        case (_, true)?:
            return
        case (let next, false)?:
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE members SET role = 'admin' WHERE community_id = \(communityId) AND user_id = \(next)
                    RETURNING 1
                    """, logger: logger))
            change.audit(
                "member.role_changed", target: ("user", next),
                metadata: [
                    "from": .string("member"), "to": .string("admin"),
                    "reason": .string("the last admin deleted their account"),
                ])
            change.announce(
                MemberRoleChanged(
                    communityId: communityId, communityName: membership.communityName, userId: next, role: .admin,
                    changedBy: userId))
        case nil:
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE communities SET deleted_at = NOW(), deleted_by = \(userId)
                    WHERE id = \(communityId) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            change.audit("community.deleted", target: ("community", communityId))
            change.announce(
                CommunityUpdated(
                    communityId: communityId, name: membership.communityName, changes: ["deleted"],
                    updatedBy: userId))
        }
    }

    /// Hard deletions past their retention; returns how many communities went.
    private func purge() async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            // One replica at a time; the others skip this round.
            var locked = false
            for try await value in try await connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('core:retention', 0))", logger: logger
            ).decode(Bool.self) {
                locked = value
            }
            guard locked else { return 0 }
            var purged: [UUID] = []
            for try await id in try await connection.query(
                """
                DELETE FROM communities WHERE deleted_at < NOW() - \(Retention.communityGrace)::interval
                RETURNING id
                """, logger: logger
            ).decode(UUID.self) {
                purged.append(id)
            }
            try await connection.run(
                """
                DELETE FROM change_log
                WHERE community_id = ANY(\(purged)) OR changed_at < NOW() - \(Retention.changeLog)::interval
                """, logger: logger)
            // A batch a round: the first run over years of entries does not hold the lock long.
            try await connection.run(
                """
                DELETE FROM audit_log WHERE id IN (
                    SELECT id FROM audit_log WHERE created_at < NOW() - \(Retention.auditLog)::interval LIMIT 10000)
                """, logger: logger)
            // Deleted posts take their comments, reactions, votes, counts and mentions with them;
            // a deleted comment goes once no reply to it is left (a reply keeps its parent).
            try await connection.run(
                """
                DELETE FROM posts WHERE id IN (
                    SELECT id FROM posts WHERE deleted_at < NOW() - \(Retention.deletedContent)::interval LIMIT 10000)
                """, logger: logger)
            try await connection.run(
                """
                DELETE FROM comments c WHERE c.id IN (
                    SELECT d.id FROM comments d
                    WHERE d.deleted_at < NOW() - \(Retention.deletedContent)::interval
                      AND NOT EXISTS (SELECT 1 FROM comments r WHERE r.parent_id = d.id)
                    LIMIT 10000)
                """, logger: logger)
            try await connection.run(
                "DELETE FROM idempotency_keys WHERE created_at < NOW() - \(Retention.idempotencyKeys)::interval",
                logger: logger)
            try await connection.run(
                "DELETE FROM invites WHERE expires_at < NOW() - \(Retention.expiredInvites)::interval",
                logger: logger)
            try await connection.run(
                """
                DELETE FROM refresh_tokens
                WHERE revoked_at < NOW() - \(Retention.deadRefreshTokens)::interval
                   OR expires_at < NOW() - \(Retention.deadRefreshTokens)::interval
                """, logger: logger)
            if !purged.isEmpty {
                logger.info("purged deleted communities", metadata: ["count": .stringConvertible(purged.count)])
            }
            return purged.count
        }
    }
}
