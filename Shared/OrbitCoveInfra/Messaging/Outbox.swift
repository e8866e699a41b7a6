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
        let row = OutboxRow(
            id: envelope.id, queue: queue, type: envelope.type, version: envelope.version,
            occurredAt: envelope.occurredAt, communityId: envelope.communityId, actorId: envelope.actorId, data: data,
            traceparent: traceparent)
        for try await _ in try await connection.query(row, logger: logger) {}
        return envelope.id
    }
}

extension Outbox {
    /// Many messages of one community-bound type in one statement (the reminders service fires
    /// thousands at once): the same rows ``enqueue(_:to:traceparent:on:logger:)`` writes, with no
    /// actor and no trace.
    package static func enqueue<Payload: MessagePayload>(
        all envelopes: [MessageEnvelope<Payload>], to queue: QueueName, on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        guard !envelopes.isEmpty else { return }
        var ids: [UUID] = []
        var occurred: [Date] = []
        var communities: [UUID] = []
        var data: [String] = []
        for envelope in envelopes {
            guard let community = envelope.communityId else {
                preconditionFailure("a batch of messages is bound to communities")
            }
            ids.append(envelope.id)
            occurred.append(envelope.occurredAt)
            communities.append(community)
            data.append(String(decoding: try JSONCoding.encoder.encode(envelope.data), as: UTF8.self))
        }
        written?.set()
        try await connection.run(
            """
            INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, data)
            SELECT id, \(queue.rawValue), \(Payload.messageType), \(Payload.messageVersion), occurred_at, community_id,
                   data::jsonb
            FROM unnest(\(ids)::uuid[], \(occurred)::timestamptz[], \(communities)::uuid[], \(data)::text[])
                 AS m(id, occurred_at, community_id, data)
            """, logger: logger)
    }
}

extension Outbox {
    /// A message that the statement making a change writes itself, completing the payload
    /// from the rows it wrote: `data` is the payload encoded here, and the statement adds the
    /// fields only it knows (`data || jsonb_build_object(...)`, each named as the
    /// payload's property). An answer to an event writes its messages so, and no round trip of
    /// their own runs while it holds the instance's lock. The statement binds ``queue``,
    /// ``type``, ``version`` and ``data``; once it committed, the caller wakes the relay
    /// (`database.outboxWakeups.wake()`) if the rows it returned say it may have written one.
    package struct Template: Sendable {
        package let queue: String
        package let type: String
        package let version: Int
        package let data: String

        package init<Payload: MessagePayload>(_ payload: Payload, to queue: QueueName = .notifications) throws {
            self.queue = queue.rawValue
            type = Payload.messageType
            version = Payload.messageVersion
            data = String(decoding: try JSONCoding.encoder.encode(payload), as: UTF8.self)
        }
    }
}

/// The outbox row every announced change writes, prepared once per connection.
struct OutboxRow: PreparedRows {
    static let sql = """
        INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data, traceparent)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .uuid, .text, .text, .int8, .timestamptz, .uuid, .uuid, .text, .text,
    ]
    var id: UUID
    var queue: String
    var type: String
    var version: Int
    var occurredAt: Date
    var communityId: UUID?
    var actorId: UUID?
    var data: String
    var traceparent: String?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        bindings.append(id)
        bindings.append(queue)
        bindings.append(type)
        bindings.append(version)
        bindings.append(occurredAt)
        bindings.append(communityId)
        bindings.append(actorId)
        bindings.append(data)
        bindings.append(traceparent)
        return bindings
    }
}

extension Outbox {
    /// Set while a ``Database`` transaction runs: whether it wrote a message, so that its relay
    /// is woken once it commits.
    @TaskLocal static var written: AtomicFlag?
}

/// Wakes the relays of this process when one of its transactions committed a message
/// (``Database`` calls ``wake()`` after the commit of a transaction that used
/// ``Outbox/enqueue(_:to:traceparent:on:logger:)``; a statement that writes its own messages,
/// an answer's, has its caller call it). A message written by another process is
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
