import Foundation
import Logging
import PostgresNIO

/// How far behind the outbox relay is: for `/metrics` and the admin command.
package struct OutboxStatus: Sendable, Equatable {
    package var unpublished: Int
    /// Seconds since the oldest unpublished row was written; nil when there is none.
    package var oldestUnpublishedAge: Double?

    package static func read(from database: Database, logger: Logger) async throws -> OutboxStatus {
        let rows = try await database.systemQuery(
            """
            SELECT count(*)::int, EXTRACT(EPOCH FROM NOW() - MIN(created_at))::float8
            FROM outbox WHERE published_at IS NULL
            """)
        for row in rows {
            let (unpublished, age) = try row.decode((Int, Double?).self)
            return OutboxStatus(unpublished: unpublished, oldestUnpublishedAge: age)
        }
        return OutboxStatus(unpublished: 0, oldestUnpublishedAge: nil)
    }
}
