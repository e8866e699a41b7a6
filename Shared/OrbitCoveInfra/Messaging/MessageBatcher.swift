import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The deliveries of one batched message type (``MessageHandlers/onBatch(_:_:)``) handled at
/// the same moment, in one transaction: the first delivery to arrive while none is being
/// handled starts a transaction for itself; those arriving while it runs wait, and go together
/// in the next one. There is no timer: a lone message goes at once.
///
/// Invariants: every submitted delivery is answered exactly once (applied, already seen, or the
/// error that failed it); at most one drain runs per type (`running`, changed only under the
/// same lock as the waiting list); a batch holds at most ``limit`` deliveries, and in practice
/// at most the consumer's prefetch, since each waiting delivery holds one of its slots. The
/// drain is a task of its own rather than the first delivery's, so that delivery is answered
/// when its batch is done, not when the batches behind it are.
package final class MessageBatcher: Sendable {
    typealias Apply =
        @Sendable (_ bodies: [[UInt8]], _ connection: PostgresConnection, _ logger: Logger) async throws
        -> Void

    struct Job: Sendable {
        var id: UUID
        var type: String
        var body: [UInt8]
        var logger: Logger
    }

    /// Most messages in one transaction.
    package static let limit = 100

    private struct Waiting {
        var job: Job
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private let consumer: String
    private let database: Database
    private let apply: Apply
    private let state = Mutex<(waiting: [Waiting], running: Bool)>(([], false))

    init(consumer: String, database: Database, apply: @escaping Apply) {
        self.consumer = consumer
        self.database = database
        self.apply = apply
    }

    /// Handles the message with whatever else is waiting; whether it was applied (false: the
    /// inbox had it already).
    func submit(_ job: Job) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            let lead = state.withLock { state in
                state.waiting.append(Waiting(job: job, continuation: continuation))
                guard !state.running else { return false }
                state.running = true
                return true
            }
            if lead { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state in
                let batch = Array(state.waiting.prefix(Self.limit))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.running = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            await run(batch)
        }
    }

    /// One transaction for `batch`; if it fails because of what a message holds, one for each
    /// of its messages, so that message fails alone. A failure no message causes (the database
    /// away, a timeout, a lock, a deadlock) fails them all at once, to be retried later: tried
    /// one after another, each would wait as long again while the queue stood still.
    private func run(_ batch: [Waiting]) async {
        do {
            let applied = try await transaction(batch.map(\.job))
            for (waiting, applied) in zip(batch, applied) { waiting.continuation.resume(returning: applied) }
        } catch {
            guard batch.count > 1, !Database.isPassing(error) else {
                for waiting in batch { waiting.continuation.resume(throwing: error) }
                return
            }
            batch[0].job.logger.notice(
                "a batch of messages failed; handling them one at a time",
                metadata: ["messages": .stringConvertible(batch.count), "error": .string(logDescription(of: error))])
            for waiting in batch { await run([waiting]) }
        }
    }

    /// Records the messages in the inbox and hands those it did not have to the handler.
    private func transaction(_ jobs: [Job]) async throws -> [Bool] {
        // The batch's statements speak for all of its messages, not for the first one's id.
        var logger = jobs[0].logger
        logger[metadataKey: "messageId"] = nil
        logger[metadataKey: "traceparent"] = nil
        logger[metadataKey: "messages"] = .stringConvertible(jobs.count)
        var ids: [UUID] = []
        var types: [String] = []
        var listed = Set<UUID>()
        for job in jobs where listed.insert(job.id).inserted {
            ids.append(job.id)
            types.append(job.type)
        }
        let (consumer, apply) = (self.consumer, self.apply)
        return try await database.transaction(scope: .system) { connection in
            var fresh = Set<UUID>()
            let rows = try await connection.query(
                """
                INSERT INTO inbox (consumer, message_id, message_type)
                SELECT \(consumer), m.id, m.type FROM unnest(\(ids)::uuid[], \(types)::text[]) AS m(id, type)
                ON CONFLICT DO NOTHING RETURNING message_id
                """, logger: logger)
            for try await id in rows.decode(UUID.self) { fresh.insert(id) }
            var applied: [Bool] = []
            var bodies: [[UInt8]] = []
            for job in jobs {
                // A message delivered twice into one batch is applied once.
                let first = fresh.remove(job.id) != nil
                applied.append(first)
                if first { bodies.append(job.body) }
            }
            if !bodies.isEmpty { try await apply(bodies, connection, logger) }
            return applied
        }
    }
}
