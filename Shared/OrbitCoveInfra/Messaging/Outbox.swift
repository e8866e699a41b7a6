import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// Writes messages into the outbox inside the caller's transaction, so a message exists if
/// and only if the change that caused it committed.
package enum Outbox {
    @discardableResult
    package static func enqueue<Payload: MessagePayload>(
        _ envelope: MessageEnvelope<Payload>, to queue: QueueName, traceparent: String? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID {
        try await enqueue(
            envelope, toQueueNamed: queue.rawValue, traceparent: traceparent, on: connection, logger: logger)
    }

    /// The same for any queue name (tests and benchmarks use throwaway queues).
    @discardableResult
    package static func enqueue<Payload: MessagePayload>(
        _ envelope: MessageEnvelope<Payload>, toQueueNamed queue: String, traceparent: String? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID {
        let data = String(decoding: try JSONCoding.encoder.encode(envelope.data), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data, traceparent)
            VALUES (\(envelope.id), \(queue), \(envelope.type), \(envelope.version), \(envelope.occurredAt),
                    \(envelope.communityId), \(envelope.actorId), \(data)::jsonb, \(traceparent))
            """, logger: logger)
        return envelope.id
    }
}
