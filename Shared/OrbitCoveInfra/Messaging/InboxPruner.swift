import Logging
import PostgresNIO
import ServiceLifecycle

/// Forgets a consumer's processed message ids once no redelivery of them can still arrive:
/// retries end within minutes and replays of dead letters within the retention period.
package struct InboxPruner: Service {
    package static let defaultRetention: Duration = .seconds(30 * 86400)

    private let database: Database
    private let consumer: String
    private let retention: Duration
    private let interval: Duration
    private let logger: Logger

    package init(
        database: Database, consumer: String, retention: Duration = Self.defaultRetention,
        interval: Duration = .seconds(3600), logger: Logger
    ) {
        self.database = database
        self.consumer = consumer
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        await runPeriodically(every: interval, failure: "inbox pruning failed", logger: logger) {
            try await prune()
        }
    }

    /// Deletes this consumer's entries older than the retention period; returns how many.
    @discardableResult
    package func prune() async throws -> Int {
        let seconds = Double(retention.components.seconds)
        let deleted = try await database.systemQuery(
            """
            DELETE FROM inbox
            WHERE consumer = \(consumer) AND processed_at < NOW() - make_interval(secs => \(seconds))
            RETURNING 1
            """
        ).count
        if deleted > 0 { logger.info("pruned inbox entries", metadata: ["rows": .stringConvertible(deleted)]) }
        return deleted
    }
}
