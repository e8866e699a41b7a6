import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// Reads the change log for one stream, as its user (row-level security shows a member's
/// communities only): where the stream cannot prove from Redis's batches that a client has
/// everything, it reads what changed since the client's position.
struct StreamLog: Sendable {
    let database: Database
    let logger: Logger

    struct Read: Sendable {
        /// The snapshot all of it was read in, and the token a client holds once it has it.
        var snapshot: PostgresSnapshot
        var token: SyncToken
        /// The communities the user is a member of now.
        var memberOf: Set<UUID>
        /// Per community asked with a position: what changed since it, in the log's order.
        var changes: [UUID: [StreamBatch.Change]]
        /// The communities asked with a position since which more than
        /// ``SyncEngine/mostChanges`` entries changed, or one the database has not reached
        /// (``PostgresSnapshot/isAhead(of:)``): their changes are not read (nor in ``changes``); the
        /// client runs a full sync instead (`reset`).
        var tooManyChanges: Set<UUID> = []
    }

    /// Refuses an account erased since its access token was issued (tokens are checked by
    /// signature and expiry alone): entering as the user, which every read of the log does
    /// first, is what refuses it (`app_enter_as_user`, migration 0076), so a stream is never
    /// opened or ticketed for one. One statement of its own, outside a transaction.
    func requireAccount(of userId: UUID) async throws {
        do {
            try await database.withConnection { connection in
                try await connection.run("SELECT app_enter_as_user(\(userId))", logger: logger)
            }
        } catch let error as PSQLError where Self.isAccountDeleted(error) {
            throw APIError.accountDeleted
        }
    }

    static func isAccountDeleted(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == Database.accountDeleted
    }

    /// One snapshot for all of it (REPEATABLE READ): the user's communities now, and for each
    /// community given a position that the user is still in, the changes that snapshot sees and
    /// the position did not.
    func read(for userId: UUID, since positions: [UUID: PostgresSnapshot]) async throws -> Read {
        try await database.transaction(scope: .user(userId), isolation: .repeatableRead) { connection in
            var (text, now, members) = ("", Date(), [UUID]())
            for try await row in try await connection.query(
                // A deleted community (restorable for 30 days) keeps its memberships, not its stream.
                """
                SELECT pg_current_snapshot()::text, NOW(), ARRAY(
                    SELECT c.id FROM communities c WHERE c.id = ANY(app_member_community_ids()) AND c.deleted_at IS NULL)
                """, logger: logger
            ).decode((String, Date, [UUID]?).self) {
                (text, now, members) = (row.0, row.1, row.2 ?? [])
            }
            guard let snapshot = PostgresSnapshot(text) else {
                throw StreamFeedError(message: "unreadable snapshot \(text)")
            }
            let memberOf = Set(members)
            var changes: [UUID: [StreamBatch.Change]] = [:]
            var tooMany = Set<UUID>()
            for (community, since) in positions where memberOf.contains(community) {
                guard !since.isAhead(of: snapshot) else {
                    tooMany.insert(community)
                    continue
                }
                var list: [StreamBatch.Change] = []
                // At most one more than the stream sends one by one, found unordered (an order
                // over a long backlog would sort all of it), then ordered.
                let rows = try await connection.query(
                    """
                    SELECT entity_kind::text, entity_id, operation::text, txid::text FROM (
                        SELECT id, entity_kind, entity_id, operation, txid FROM change_log
                        WHERE community_id = \(community)
                          AND txid >= pg_snapshot_xmin(\(since.text)::pg_snapshot)
                          AND NOT pg_visible_in_snapshot(txid, \(since.text)::pg_snapshot)
                        LIMIT \(SyncEngine.mostChanges + 1)
                    ) AS entries
                    ORDER BY id
                    """, logger: logger)
                for try await (kind, id, operation, txid) in rows.decode((String, UUID, String, String).self) {
                    guard let txid = UInt64(txid) else { continue }
                    list.append(.init(community: community, kind: kind, id: id, operation: operation, txid: txid))
                }
                if list.count > SyncEngine.mostChanges {
                    tooMany.insert(community)
                } else {
                    changes[community] = StreamBatch.Change.oncePerCommit(list)
                }
            }
            return Read(
                snapshot: snapshot, token: SyncToken(snapshot: text, issuedAt: now), memberOf: memberOf,
                changes: changes, tooManyChanges: tooMany)
        }
    }
}
