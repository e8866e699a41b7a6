import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// The service's periodic work, safe in every replica at once (rows are claimed with SKIP
/// LOCKED): pushes that waited for someone's quiet hours to end are queued when they fall
/// due, pushes owed for a day are given up, and history older than the retention period (90
/// days, as the seed says) goes.
package struct NotificationHousekeeping: Sendable {
    let database: Database
    let retentionDays: Int
    let logger: Logger

    package init(database: Database, retentionDays: Int, logger: Logger) {
        self.database = database
        self.retentionDays = retentionDays
        self.logger = logger
    }

    /// Queues the deferred pushes now due; how many.
    @discardableResult
    package func queueDeferredPushes() async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                """
                WITH due AS (
                    SELECT id FROM notifications WHERE push_at <= NOW() AND NOT push_queued
                    ORDER BY push_at LIMIT 10000 FOR UPDATE SKIP LOCKED
                )
                UPDATE notifications n SET push_queued = true FROM due WHERE n.id = due.id RETURNING n.id
                """, logger: logger)
            var ids: [UUID] = []
            for try await id in rows.decode(UUID.self) { ids.append(id) }
            try await HistoryWriter.queuePushes(ids, on: connection, logger: logger)
            if !ids.isEmpty { logger.info("queued deferred pushes", metadata: ["count": "\(ids.count)"]) }
            return ids.count
        }
    }

    /// Gives up pushes still owed a day after they fell due (their job was dead-lettered, say):
    /// APNs would not keep them longer either, and news that old is better read than pushed.
    @discardableResult
    package func abandonStalePushes() async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            try await connection.changedRows(
                """
                UPDATE notifications SET push_at = NULL
                WHERE push_at < NOW() - interval '1 day'
                RETURNING 1
                """, logger: logger)
        }
    }

    /// Deletes history past the retention period, a batch at a time; how many rows.
    @discardableResult
    package func prune() async throws -> Int {
        var total = 0
        while true {
            let deleted = try await database.transaction(scope: .system) { connection in
                try await connection.changedRows(
                    """
                    DELETE FROM notifications WHERE id IN (
                        SELECT id FROM notifications
                        WHERE created_at < NOW() - make_interval(days => \(retentionDays)::int) LIMIT 5000)
                    RETURNING 1
                    """, logger: logger)
            }
            total += deleted
            guard deleted == 5000 else { return total }
        }
    }

    func jobs(every interval: Duration) -> [PeriodicJob] {
        [
            PeriodicJob("deferred pushes", every: interval, logger: logger) { try await queueDeferredPushes() },
            PeriodicJob("notification retention", every: .seconds(3600), logger: logger) {
                try await abandonStalePushes()
                try await prune()
            },
        ]
    }
}
