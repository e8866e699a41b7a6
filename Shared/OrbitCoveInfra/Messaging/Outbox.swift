import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO
import Synchronization

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
        written?.set()
        try await connection.query(
            """
            INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data, traceparent)
            VALUES (\(envelope.id), \(queue), \(envelope.type), \(envelope.version), \(envelope.occurredAt),
                    \(envelope.communityId), \(envelope.actorId), \(data)::jsonb, \(traceparent))
            """, logger: logger)
        return envelope.id
    }
}

extension Outbox {
    /// Set while a ``Database`` transaction runs: whether it wrote a message, so that its relay
    /// is woken once it commits.
    @TaskLocal static var written: Written?

    final class Written: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }
}

/// Wakes the relays of this process when one of its transactions committed a message
/// (``Database`` calls ``wake()`` after the commit). A message written by another process is
/// that process's relay's to send; the relays' poll is the net under a process that died
/// between its commit and the wake-up. No `NOTIFY`: PostgreSQL serialises the commits of every
/// transaction that sent one (migration 0026).
package final class OutboxWakeups: Sendable {
    private let waiting = Mutex<(next: Int, continuations: [Int: AsyncStream<Void>.Continuation])>((0, [:]))

    package init() {}

    package func wake() {
        waiting.withLock { state in
            for continuation in state.continuations.values { continuation.yield() }
        }
    }

    /// Wake-ups from now on; one is kept while the listener is busy, so none is lost.
    package func stream() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = waiting.withLock { state in
            defer { state.next += 1 }
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.waiting.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}
