import Foundation
import Logging
import Metrics
import OrbitCoveModels
import PostgresNIO

/// Routes deliveries to typed handlers and makes them idempotent: the message id goes into
/// the inbox in the same transaction as the handler's writes, and a message already in the
/// inbox is acknowledged without running the handler again. Acks happen only after commit.
package struct MessageHandlers: Sendable {
    private let consumer: String
    private let database: Database
    private var handlers: [String: Registered] = [:]

    /// Work a handler does before its transaction (``on(_:prepare:apply:)``), its result
    /// handed to the part that runs inside it.
    private typealias Preparation = @Sendable (_ body: [UInt8], _ logger: Logger) async throws -> any Sendable
    private typealias Application =
        @Sendable (_ body: [UInt8], _ prepared: (any Sendable)?, _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Void

    private struct Registered: Sendable {
        var version: Int
        var prepare: Preparation?
        var apply: Application
        /// Set for handlers registered ``onBatch(_:_:)``.
        var batch: MessageBatcher?
    }

    /// `consumer` names this consumer in the inbox; two services consuming the same message
    /// each record it under their own name.
    package init(consumer: String, database: Database) {
        self.consumer = consumer
        self.database = database
    }

    package mutating func on<Payload: MessagePayload>(
        _ type: Payload.Type,
        _ handle: @escaping @Sendable (MessageEnvelope<Payload>, PostgresConnection, Logger) async throws -> Void
    ) {
        handlers[Payload.messageType] = Registered(
            version: Payload.messageVersion, prepare: nil,
            apply: { body, _, connection, logger in
                let envelope = try JSONCoding.decoder.decode(MessageEnvelope<Payload>.self, from: Data(body))
                try await handle(envelope, connection, logger)
            })
    }

    /// A handler for messages of a type that arrive in numbers (a reminder for each of 100,000
    /// members, an answer to every event): the deliveries of `type` handled at the same moment
    /// share one transaction, and `handle` gets all of them at once, so it can write them in a
    /// few statements rather than a transaction each. The inbox still records each message, and
    /// a message already in it is not handed over again. If the shared transaction fails
    /// because of what a message holds, each of its messages is tried again alone, so one that
    /// can never succeed does not hold back the others; a failure of the moment (the database
    /// away, a timeout, a lock) fails them all, to be retried. Messages wait for no timer: what
    /// arrived while the previous transaction ran is the next batch (at most the consumer's
    /// prefetch, and ``MessageBatcher/limit``). A type's batches run one at a time, so a
    /// handler that waits on something slow (a provider, a store) belongs on ``on(_:_:)``. A
    /// batched handler cannot keep part of its work (``RetryRemainder``).
    package mutating func onBatch<Payload: MessagePayload>(
        _ type: Payload.Type,
        _ handle:
            @escaping @Sendable ([MessageEnvelope<Payload>], PostgresConnection, Logger) async throws -> Void
    ) {
        let apply: MessageBatcher.Apply = { bodies, connection, logger in
            let envelopes = try bodies.map {
                try JSONCoding.decoder.decode(MessageEnvelope<Payload>.self, from: Data($0))
            }
            try await handle(envelopes, connection, logger)
        }
        // `apply` is the plain path's; `handle` sends a batched type to its batcher instead.
        handlers[Payload.messageType] = Registered(
            version: Payload.messageVersion, prepare: nil,
            apply: { body, _, connection, logger in try await apply([body], connection, logger) },
            batch: MessageBatcher(consumer: consumer, database: database, apply: apply))
    }

    /// A handler whose slow part must not hold a transaction open (decoding images, calling a
    /// store): `prepare` runs first, outside any transaction, and may run again for a redelivered
    /// message (so it must be safe to repeat); `apply` then runs in the inbox's transaction with
    /// its result, as a plain handler does. A message already in the inbox is acknowledged
    /// without preparing it.
    package mutating func on<Payload: MessagePayload, Prepared: Sendable>(
        _ type: Payload.Type,
        prepare: @escaping @Sendable (MessageEnvelope<Payload>, Logger) async throws -> Prepared,
        apply: @escaping @Sendable (MessageEnvelope<Payload>, Prepared, PostgresConnection, Logger) async throws -> Void
    ) {
        handlers[Payload.messageType] = Registered(
            version: Payload.messageVersion,
            prepare: { body, logger in
                try await prepare(
                    try JSONCoding.decoder.decode(MessageEnvelope<Payload>.self, from: Data(body)), logger)
            },
            apply: { body, prepared, connection, logger in
                let envelope = try JSONCoding.decoder.decode(MessageEnvelope<Payload>.self, from: Data(body))
                guard let prepared = prepared as? Prepared else {
                    throw MessageValidationError("\(Payload.messageType) was applied without its preparation")
                }
                try await apply(envelope, prepared, connection, logger)
            })
    }

    /// Whether this consumer has already applied the message (checked before preparing it).
    private func seen(_ id: UUID, logger: Logger) async throws -> Bool {
        let consumer = self.consumer
        return try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                "SELECT 1 FROM inbox WHERE consumer = \(consumer) AND message_id = \(id)", logger: logger)
            for try await _ in rows { return true }
            return false
        }
    }

    /// A message in a transaction of its own.
    private func applyAlone(
        _ head: EnvelopeHead, _ body: [UInt8], _ handler: Registered, prepared: (any Sendable)?, logger: Logger
    ) async throws -> Applied {
        let consumer = self.consumer
        return try await database.transaction(scope: .system) { connection -> Applied in
            let rows = try await connection.query(
                """
                INSERT INTO inbox (consumer, message_id, message_type) VALUES (\(consumer), \(head.id), \(head.type))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            guard inserted else { return .duplicate }
            do {
                try await handler.apply(body, prepared, connection, logger)
            } catch let remainder as RetryRemainder {
                // Keep what was done; forget the message was seen, so the retry runs again.
                try await connection.run(
                    "DELETE FROM inbox WHERE consumer = \(consumer) AND message_id = \(head.id)", logger: logger)
                return .partly(remainder.reason)
            }
            return .applied
        }
    }

    package func handle(_ message: IncomingMessage, logger baseLogger: Logger) async -> HandlingResult {
        var logger = baseLogger
        if case .string(let traceparent) = message.headers["traceparent"] {
            logger[metadataKey: "traceparent"] = .string(traceparent)
        }
        let head: EnvelopeHead
        do {
            head = try JSONCoding.decoder.decode(EnvelopeHead.self, from: Data(message.body))
        } catch {
            return .poison(reason: "not a message envelope: \(error)")
        }
        logger[metadataKey: "messageId"] = .string(head.id.lowercasedString)
        logger[metadataKey: "messageType"] = .string(head.type)
        guard let handler = handlers[head.type], handler.version == head.version else {
            return .poison(reason: "no handler for \(head.type) version \(head.version)")
        }
        do {
            var prepared: (any Sendable)?
            if let prepare = handler.prepare {
                if try await seen(head.id, logger: logger) {
                    logger.info("duplicate message acknowledged without reprocessing")
                    return .done
                }
                prepared = try await prepare(message.body, logger)
            }
            // Handlers act for the system: a message names its community, and fanning it out
            // to that community's members reads past any one user's view.
            let applied: Applied
            if let batch = handler.batch {
                applied =
                    try await batch.submit(.init(id: head.id, type: head.type, body: message.body, logger: logger))
                    ? .applied : .duplicate
            } else {
                applied = try await applyAlone(head, message.body, handler, prepared: prepared, logger: logger)
            }
            if case .partly(let reason) = applied {
                logger.notice("message partly handled; the rest will be retried", metadata: ["reason": .string(reason)])
                return .failed(reason: reason)
            }
            if applied == .applied {
                logger.info("message processed")
            } else {
                logger.info("duplicate message acknowledged without reprocessing")
            }
            Counter(
                label: "orbitcove_messages_consumed_total", dimensions: [("consumer", consumer), ("type", head.type)]
            )
            .increment()
            return .done
        } catch let error as DecodingError {
            return .poison(reason: "payload does not decode: \(error)")
        } catch let error as MessageValidationError {
            return .poison(reason: error.reason)
        } catch let error as APIError where error.status == .serviceUnavailable {
            // The database is away: waiting for it must not use up the message's attempts.
            logger.notice("message handler deferred", metadata: ["error": .string(logDescription(of: error))])
            return .deferred(reason: logDescription(of: error))
        } catch {
            logger.warning("message handler failed", metadata: ["error": .string(logDescription(of: error))])
            return .failed(reason: logDescription(of: error))
        }
    }
}

private enum Applied: Equatable {
    case applied
    case duplicate
    case partly(String)
}

/// Thrown by a handler that did part of its work and must keep it (pushes APNs accepted)
/// while the rest waits for another attempt (pushes APNs asked us to retry): its writes
/// commit, the message is not marked as seen, and the delivery goes through the retry tiers
/// like a failure, and is dead-lettered after the last.
package struct RetryRemainder: Error {
    package let reason: String

    package init(_ reason: String) { self.reason = reason }
}

/// Thrown by a handler for a message that decodes but can never be applied (a validation
/// failure): it is dead-lettered at once instead of retried.
package struct MessageValidationError: Error {
    package let reason: String

    package init(_ reason: String) { self.reason = reason }
}
