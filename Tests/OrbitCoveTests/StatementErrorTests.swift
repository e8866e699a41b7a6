import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A statement that fails while it runs fails its transaction, and nothing the transaction
/// wrote stays. `PostgresConnection.query` returns as soon as a statement that yields rows has
/// started; its error comes with the rows, so a caller that does not read them never sees it, and
/// the `COMMIT` after it is turned by PostgreSQL into a rollback nobody is told of.
@Suite struct StatementErrorTests {
    /// Fails at execution, not while being planned: `random()` is not folded into a constant.
    static let failsWhileRunning: PostgresQuery = "SELECT 1 / (random() * 0)::int"

    @Test func aStatementThatFailsWhileRunningFailsItsTransactionAndKeepsNothing() async throws {
        try await withTestDatabase { database in
            let queue = "test-statement-error-\(UUID().uuidString.prefix(8).lowercased())"
            let message = MessageEnvelope(
                communityId: nil, actorId: nil,
                data: CommunityCreated(communityId: UUID(), name: "Lost", createdBy: UUID()))
            // Its rows unread, the failure is not seen: the transaction "succeeds" and keeps nothing.
            let unseen = try await database.transaction(scope: .system) { connection in
                let id = try await Outbox.enqueue(
                    message, toQueueNamed: queue, on: connection, logger: TestEnvironment.logger)
                try await connection.query(Self.failsWhileRunning, logger: TestEnvironment.logger)
                return id
            }
            #expect(try await database.systemQuery("SELECT 1 FROM outbox WHERE id = \(unseen)").isEmpty)
            // Through `run`, the statement's error is the transaction's.
            await #expect(throws: PSQLError.self) {
                try await database.transaction(scope: .system) { connection in
                    try await Outbox.enqueue(
                        message, toQueueNamed: queue, on: connection, logger: TestEnvironment.logger)
                    try await connection.run(Self.failsWhileRunning, logger: TestEnvironment.logger)
                }
            }
            #expect(try await database.systemQuery("SELECT 1 FROM outbox WHERE queue = \(queue)").isEmpty)
        }
    }
}
