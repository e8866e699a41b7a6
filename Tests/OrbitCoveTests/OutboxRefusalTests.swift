import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A row the broker refuses (here unroutable: a queue nobody declared; in production a queue at
/// its length limit nacks the same way) is held back before it is tried again, not claimed again
/// at once: a hostile probe's refused row was published and refused over two thousand times in
/// forty seconds, a relay spinning at most of a core. Against the real outbox and RabbitMQ: the
/// relays of the tests running beside this one may claim the row too, and must hold it as well.
/// The row has been tried nine times already, so it is held for the longest, a minute: a
/// shorter hold could run out between the checks on a machine loaded by the whole suite (the
/// first hold, 5 s, once did in a fresh clone's run).
@Suite struct OutboxRefusalTests {
    /// The row's attempts, last error and whether it is held (claimed until more than 30 s from now).
    static func state(of id: UUID, in database: Database) async throws -> (attempts: Int, error: String?, held: Bool) {
        let rows = try await database.systemQuery(
            """
            SELECT attempts, last_error, coalesce(claimed_until > NOW() + interval '30 seconds', false)
            FROM outbox WHERE id = \(id)
            """)
        guard let row = rows.first else { throw TestFailure("the outbox row is gone") }
        return try row.decode((Int, String?, Bool).self)
    }

    @Test func aRowTheBrokerRefusesIsHeldBackBeforeItIsTriedAgain() async throws {
        try await withTestDatabase { database in
            let id = UUID()
            _ = try await database.systemQuery(
                """
                INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, data, attempts)
                VALUES (\(id), \("orbitcove-test-unroutable-\(id.uuidString.lowercased())"), 'test.unroutable', 1,
                        NOW(), '{}', 9)
                """)
            defer { Task { _ = try? await database.systemQuery("DELETE FROM outbox WHERE id = \(id)") } }
            let publisher = AMQPPublisher(
                settings: try TestEnvironment.amqpSettings(), topology: .forQueues(QueueName.allCases),
                logger: TestEnvironment.logger)
            let relay = OutboxRelay(
                database: database, publisher: publisher, appId: "refusal-tests", logger: TestEnvironment.logger)
            try await withServices([publisher]) {
                // Until the row has been tried (this relay or another may take it first, and the
                // rows of the tests beside this one come before it), for up to 30 s.
                var tried = try await Self.state(of: id, in: database)
                let deadline = ContinuousClock.now + .seconds(30)
                while tried.error == nil, ContinuousClock.now < deadline {
                    if try await relay.relayBatch() == 0 { try await Task.sleep(for: .milliseconds(50)) }
                    tried = try await Self.state(of: id, in: database)
                }
                #expect(tried.attempts >= 10)
                #expect(tried.error == "not confirmed by the broker")
                #expect(tried.held, "refused and released at once")
                // Claims now do not take it again.
                for _ in 0..<5 { _ = try await relay.relayBatch() }
                let after = try await Self.state(of: id, in: database)
                #expect(after.attempts == tried.attempts, "tried \(after.attempts - tried.attempts) more times")
            }
        }
    }
}
