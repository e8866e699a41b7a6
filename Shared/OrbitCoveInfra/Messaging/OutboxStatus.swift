import Foundation
import Logging
import PostgresNIO

/// How far behind the outbox relay is: for `/metrics` and the admin command.
package struct OutboxStatus: Sendable, Equatable {
    package var unpublished: Int
    /// Seconds since the oldest unpublished row was written; nil when there is none.
    package var oldestUnpublishedAge: Double?

    /// One statement outside a transaction (`outbox_backlog()`, migration 0026): cheap enough for
    /// the relays' idle poll.
    package static func read(from database: Database, logger: Logger) async throws -> OutboxStatus {
        let rows = try await database.query("SELECT unpublished, oldest_age FROM outbox_backlog()")
        for row in rows {
            let (unpublished, age) = try row.decode((Int, Double?).self)
            return OutboxStatus(unpublished: unpublished, oldestUnpublishedAge: age)
        }
        return OutboxStatus(unpublished: 0, oldestUnpublishedAge: nil)
    }
}
