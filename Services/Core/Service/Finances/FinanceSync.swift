import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The ledger and dues as sync sends them. A transaction comes with its splits (a split's
/// change logs its transaction), settlements are transactions of type `settlement`, and dues
/// come with the syncing member's standing (a payment or waiver logs its dues). Deleted ones
/// are in `deleted`.
enum FinanceSync {
    static func transactions() -> SyncKind {
        SyncKind(
            kind: "transaction", section: "transactions", as: LedgerTransaction.self,
            byId: { community, ids, connection, logger in
                try await entries(
                    """
                    SELECT \(unescaped: LedgerRows.columns) FROM transactions t \(unescaped: LedgerRows.joins)
                    WHERE t.community_id = \(community) AND t.deleted_at IS NULL AND t.id = ANY(\(ids))
                    ORDER BY t.id
                    """, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await entries(
                    """
                    SELECT \(unescaped: LedgerRows.columns) FROM transactions t \(unescaped: LedgerRows.joins)
                    WHERE t.community_id = \(community) AND t.deleted_at IS NULL
                      AND (\(after == nil) OR t.id > \(after ?? .random()))
                    ORDER BY t.id
                    LIMIT \(limit)
                    """, on: connection, logger: logger)
            })
    }

    static func dues() -> SyncKind {
        SyncKind(
            kind: "dues", section: "dues", as: Dues.self,
            byId: { community, ids, connection, logger in
                try await dues(
                    """
                    SELECT \(unescaped: DuesStore.columns) FROM dues d
                    WHERE d.community_id = \(community) AND d.deleted_at IS NULL AND d.id = ANY(\(ids))
                    ORDER BY d.id
                    """, community: community, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await dues(
                    """
                    SELECT \(unescaped: DuesStore.columns) FROM dues d
                    WHERE d.community_id = \(community) AND d.deleted_at IS NULL
                      AND (\(after == nil) OR d.id > \(after ?? .random()))
                    ORDER BY d.id
                    LIMIT \(limit)
                    """, community: community, on: connection, logger: logger)
            })
    }

    private static func entries(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, LedgerTransaction)] {
        var entries: [(UUID, LedgerTransaction)] = []
        for try await row in try await connection.query(query, logger: logger) {
            let entry = try LedgerRows.read(row)
            entries.append((entry.id, entry))
        }
        return entries
    }

    private static func dues(
        _ query: PostgresQuery, community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, Dues)] {
        var context: (UUID, String)?
        for try await (viewer, timezone) in try await connection.query(
            """
            SELECT app_current_user_id(), coalesce(settings ->> 'timezone', 'UTC') FROM communities WHERE id = \(community)
            """, logger: logger
        ).decode((UUID, String).self) {
            context = (viewer, timezone)
        }
        guard let (viewer, timezone) = context else { return [] }
        let ledger = try await DuesStore.ledger(
            query, community: community, timezone: timezone, on: connection, logger: logger)
        return ledger.rows.map { ($0.id, ledger.dues($0, viewer: viewer)) }
    }
}
