import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO
import ServiceLifecycle

/// How long deleted things can come back, and when the retention jobs remove them for good.
enum Retention {
    static let accountGrace = "7 days"
    static let communityGrace = "30 days"
    static let idempotencyKeys = "24 hours"
    static let expiredInvites = "7 days"
    static let changeLog = "90 days"
    /// Refresh tokens, after revocation or expiry (spent tokens stay until then, for reuse detection).
    static let deadRefreshTokens = "30 days"
}

/// The core API's half of the seed's data lifecycle, every few minutes in whichever replica
/// takes the lock first: accounts whose deletion grace period ended are anonymised (their
/// communities keep an admin), communities deleted more than 30 days ago are purged, and
/// idempotency keys, long-expired invites, old change-log rows and refresh tokens revoked or
/// expired more than 30 days ago are dropped.
struct RetentionJobs: Service {
    let database: Database
    let cache: CommunityCache
    let interval: Duration
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
        for userId in try await accountsDue() {
            let left = try await deleteAccount(userId)
            for communityId in left { await cache.invalidate(communityId) }
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

    /// Anonymises one account; returns the communities it left.
    private func deleteAccount(_ userId: UUID) async throws -> [UUID] {
        try await database.transaction(scope: .system) { connection in
            // Another replica, or a cancellation that just came in, may have settled it.
            let due = try await connection.query(
                """
                SELECT 1 FROM users WHERE id = \(userId) AND deleted_at IS NULL
                  AND deletion_requested_at < NOW() - \(Retention.accountGrace)::interval
                FOR UPDATE SKIP LOCKED
                """, logger: logger)
            var isDue = false
            for try await _ in due { isDue = true }
            guard isDue else { return [] }

            var communities: [(UUID, String)] = []
            for try await row in try await connection.query(
                "SELECT community_id, role::text FROM members WHERE user_id = \(userId) AND left_at IS NULL",
                logger: logger
            ).decode((UUID, String).self) {
                communities.append(row)
            }
            for (communityId, role) in communities {
                try await MemberStore.lock(communityId, on: connection, logger: logger)
                if role == "admin" { try await keepAnAdmin(communityId, leaving: userId, on: connection) }
                // Each community's admins see the member go in their own audit log.
                try await AuditLog.record(
                    "member.account_deleted", userId: userId, communityId: communityId, targetType: "user",
                    targetId: userId, ipAddress: nil, on: connection, logger: logger)
            }
            try await connection.query(
                "UPDATE members SET left_at = NOW() WHERE user_id = \(userId) AND left_at IS NULL", logger: logger)
            try await connection.query("DELETE FROM family_members WHERE user_id = \(userId)", logger: logger)
            try await connection.query(
                """
                UPDATE refresh_tokens SET revoked_at = coalesce(revoked_at, NOW()),
                    revoked_reason = coalesce(revoked_reason, 'account_deleted')
                WHERE user_id = \(userId)
                """, logger: logger)
            let tag = userId.lowercasedString
            try await connection.query(
                """
                UPDATE users SET display_name = '[Deleted User]', email = \("deleted-\(tag)@deleted.invalid"),
                    apple_id = \("deleted:\(tag)"), avatar_url = NULL, deleted_at = NOW(), updated_at = NOW()
                WHERE id = \(userId)
                """, logger: logger)
            try await AuditLog.record(
                "account.deleted", userId: userId, targetType: "user", targetId: userId,
                metadata: ["communitiesLeft": .number(Double(communities.count))], ipAddress: nil,
                on: connection, logger: logger)
            logger.info("account deleted after its grace period", metadata: ["userId": .string(tag)])
            return communities.map(\.0)
        }
    }

    /// When the last admin goes, the longest-standing member becomes admin; with nobody
    /// left, the community is deleted (and restorable for 30 days like any other).
    private func keepAnAdmin(
        _ communityId: UUID, leaving userId: UUID, on connection: PostgresConnection
    )
        async throws
    {
        let others = try await connection.query(
            """
            SELECT user_id, role::text FROM members
            WHERE community_id = \(communityId) AND left_at IS NULL AND user_id <> \(userId)
            ORDER BY (role = 'admin') DESC, joined_at, id
            LIMIT 1
            """, logger: logger)
        var successor: (UUID, String)?
        for try await row in others.decode((UUID, String).self) { successor = row }
        switch successor {
        case (_, "admin")?:
            return
        case (let next, _)?:
            try await connection.query(
                "UPDATE members SET role = 'admin' WHERE community_id = \(communityId) AND user_id = \(next)",
                logger: logger)
            try await AuditLog.record(
                "member.role_changed", userId: userId, communityId: communityId, targetType: "user", targetId: next,
                metadata: [
                    "from": .string("member"), "to": .string("admin"),
                    "reason": .string("the last admin deleted their account"),
                ],
                ipAddress: nil, on: connection, logger: logger)
        case nil:
            try await connection.query(
                """
                UPDATE communities SET deleted_at = NOW(), deleted_by = \(userId)
                WHERE id = \(communityId) AND deleted_at IS NULL
                """, logger: logger)
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
            try await connection.query(
                """
                DELETE FROM change_log
                WHERE community_id = ANY(\(purged)) OR changed_at < NOW() - \(Retention.changeLog)::interval
                """, logger: logger)
            try await connection.query(
                "DELETE FROM idempotency_keys WHERE created_at < NOW() - \(Retention.idempotencyKeys)::interval",
                logger: logger)
            try await connection.query(
                "DELETE FROM invites WHERE expires_at < NOW() - \(Retention.expiredInvites)::interval",
                logger: logger)
            try await connection.query(
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
