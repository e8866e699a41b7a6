import Foundation
import Logging
import Metrics
import OrbitCoveModels

/// What became of a delivery in its handler.
package enum HandlingResult: Sendable, Equatable {
    /// Done, or already done before: acknowledge it.
    case done
    /// Failed this time (a database hiccup, say): try again later.
    case failed(reason: String)
    /// Can never succeed (bad JSON, unknown type or version, invalid payload): dead-letter now.
    case poison(reason: String)
    /// A dependency is away (the database): try again after the first delay, without counting
    /// this as an attempt, so an outage does not dead-letter what would succeed after it.
    case deferred(reason: String)
}

/// Turns a handling result into broker actions. A failure is republished (with confirms) to
/// the hold queue for its next delay, and the delivery acked; after the policy's last attempt,
/// or for a poison message, it is published to the dead-letter exchange with the reason in
/// its headers. Only a confirmed publish lets the original go; if publishing fails the
/// delivery is returned to the queue (where the broker's delivery limit still bounds it).
package struct RetryRouter: Sendable {
    package static let attemptHeader = "x-orbitcove-attempt"
    package static let reasonHeader = "x-orbitcove-dead-letter-reason"
    package static let queueHeader = "x-orbitcove-original-queue"
    package static let deadLetteredAtHeader = "x-orbitcove-dead-lettered-at"

    private let queue: String
    private let policy: RetryPolicy
    private let publisher: AMQPPublisher
    private let logger: Logger
    private let retried: Counter
    private let deadLettered: Counter

    package init(queue: String, policy: RetryPolicy, publisher: AMQPPublisher, logger: Logger) {
        self.queue = queue
        self.policy = policy
        self.publisher = publisher
        self.logger = logger
        self.retried = Counter(label: "orbitcove_messages_retried_total", dimensions: [("queue", queue)])
        self.deadLettered = Counter(label: "orbitcove_messages_dead_lettered_total", dimensions: [("queue", queue)])
    }

    package func settle(_ message: IncomingMessage, _ result: HandlingResult) async -> DeliveryOutcome {
        switch result {
        case .done:
            return .ack
        case .poison(let reason):
            return await deadLetter(message, reason: reason)
        case .deferred:
            guard let delay = policy.delay(afterAttempt: 1) else { return .retry }
            let copy = republished(
                message, exchange: "", routingKey: policy.holdQueue(for: queue, delay: delay), message.stringHeaders)
            return await confirm(copy) ? .ack : .retry
        case .failed(let reason):
            let attempt = message.attempt
            guard let delay = policy.delay(afterAttempt: attempt) else {
                return await deadLetter(message, reason: "failed \(attempt) times; last error: \(reason)")
            }
            var headers = message.stringHeaders
            headers[Self.attemptHeader] = String(attempt + 1)
            let copy = republished(
                message, exchange: "", routingKey: policy.holdQueue(for: queue, delay: delay), headers)
            guard await confirm(copy) else { return .retry }
            retried.increment()
            logger.info(
                "message will be retried",
                metadata: [
                    "messageId": .string(message.messageId ?? "-"), "attempt": .stringConvertible(attempt),
                    "retryIn": .stringConvertible(delay),
                ])
            return .ack
        }
    }

    private func deadLetter(_ message: IncomingMessage, reason: String) async -> DeliveryOutcome {
        var headers = message.stringHeaders
        headers[Self.reasonHeader] = String(reason.prefix(1000))
        headers[Self.queueHeader] = queue
        headers[Self.deadLetteredAtHeader] = JSONCoding.formatTimestamp(Date())
        headers[Self.attemptHeader] = String(message.attempt)
        let copy = republished(
            message, exchange: QueueTopology.deadLetterExchange, routingKey: queue, headers)
        deadLettered.increment()
        logger.error(
            "message dead-lettered",
            metadata: ["messageId": .string(message.messageId ?? "-"), "reason": .string(reason)])
        // Failing that, the broker dead-letters it itself (without our reason).
        return await confirm(copy) ? .ack : .reject
    }

    private func republished(
        _ message: IncomingMessage, exchange: String, routingKey: String, _ headers: [String: String]
    ) -> OutgoingMessage {
        OutgoingMessage(
            id: message.messageId.flatMap(UUID.init(uuidString:)) ?? .random(), type: message.type ?? "unknown",
            exchange: exchange, routingKey: routingKey, body: message.body, headers: headers,
            appId: message.appId ?? "orbitcove")
    }

    private func confirm(_ message: OutgoingMessage) async -> Bool {
        do {
            return try await publisher.publish([message]).contains(message.id)
        } catch {
            logger.warning(
                "could not republish a failed message; returning it to the queue",
                metadata: ["error": .string("\(error)")])
            return false
        }
    }
}
