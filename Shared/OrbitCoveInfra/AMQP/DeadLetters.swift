import Foundation
import NIOPosix
import OrbitCoveModels

/// One message in a `<queue>.dead-letter` queue, with why it is there.
package struct DeadLetter: Sendable {
    package var messageId: String?
    package var type: String?
    package var reason: String?
    package var attempts: Int
    package var deadLetteredAt: String?
    package var headers: [String: AMQPFieldValue]
    package var body: [UInt8]

    init(_ message: IncomingMessage) {
        messageId = message.messageId
        type = message.type
        let strings = message.stringHeaders
        // Dead-lettered by the broker itself (delivery limit), the reason is in x-death instead.
        reason =
            strings[RetryRouter.reasonHeader] ?? (message.headers["x-death"] != nil ? "delivery limit reached" : nil)
        attempts = message.attempt
        deadLetteredAt = strings[RetryRouter.deadLetteredAtHeader]
        headers = message.headers
        body = message.body
    }
}

/// Operator tasks on dead-letter queues, each over a short-lived connection of its own on a
/// pool thread: browse, replay to the work queue, purge.
package enum DeadLetters {
    /// Up to `limit` dead letters of `queue`, oldest first, left in place.
    package static func list(queue: String, limit: Int, settings: AMQPSettings) async throws -> [DeadLetter] {
        try await NIOThreadPool.singleton.runIfActive {
            let connection = try AMQPConnection(settings: settings)
            var letters: [DeadLetter] = []
            // Nothing is acknowledged: closing the connection puts every message back.
            while letters.count < limit,
                let message = try connection.get(queue: QueueTopology.deadLetterQueue(for: queue))
            {
                letters.append(DeadLetter(message))
            }
            return letters
        }
    }

    /// Publishes the dead letters `matching` back to `queue` (as first attempts), removing each
    /// from the dead-letter queue only once the broker confirmed the copy. Returns how many.
    package static func replay(
        queue: String, limit: Int = .max, settings: AMQPSettings, matching: @escaping @Sendable (DeadLetter) -> Bool
    ) async throws -> Int {
        try await NIOThreadPool.singleton.runIfActive {
            let connection = try AMQPConnection(settings: settings)
            try connection.enableConfirms()
            let deadLetterQueue = QueueTopology.deadLetterQueue(for: queue)
            // Only what is there now: a replayed message that fails again comes back to this
            // queue while we read it, and must not be replayed twice in one run.
            var remaining = try connection.inspect(queue: deadLetterQueue).messages
            var publishTag: UInt64 = 0
            var replayed = 0
            while replayed < limit, remaining > 0, let message = try connection.get(queue: deadLetterQueue) {
                remaining -= 1
                guard matching(DeadLetter(message)) else { continue }
                var headers = message.stringHeaders
                for name in [
                    RetryRouter.reasonHeader, RetryRouter.queueHeader, RetryRouter.deadLetteredAtHeader,
                    RetryRouter.attemptHeader,
                ] {
                    headers.removeValue(forKey: name)
                }
                try connection.publish(
                    OutgoingMessage(
                        id: message.messageId.flatMap(UUID.init(uuidString:)) ?? .random(),
                        type: message.type ?? "unknown",
                        routingKey: queue, body: message.body, headers: headers, appId: message.appId ?? "orbitcove"))
                publishTag += 1
                try waitForConfirm(publishTag, on: connection)
                try connection.ack(message.deliveryTag)
                replayed += 1
            }
            return replayed
        }
    }

    /// Deletes every message in `queue`'s dead-letter queue; returns how many.
    package static func purge(queue: String, settings: AMQPSettings) async throws -> Int {
        try await NIOThreadPool.singleton.runIfActive {
            try AMQPConnection(settings: settings).purge(queue: QueueTopology.deadLetterQueue(for: queue))
        }
    }

    private static func waitForConfirm(_ tag: UInt64, on connection: AMQPConnection) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            switch try connection.nextConfirmFrame(timeout: .milliseconds(200)) {
            case .ack(let acked, let multiple) where acked == tag || (multiple && acked >= tag):
                return
            case .nack(let nacked, let multiple) where nacked == tag || (multiple && nacked >= tag):
                throw AMQPError.unexpected("the broker refused the replayed message")
            default:
                continue
            }
        }
        throw AMQPError.confirmTimeout(outstanding: 1)
    }
}
