import OrbitCoveModels

/// The broker objects the services rely on, every argument explicit (RabbitMQ 3.10's quorum
/// queue defaults differ from 4.x's). Declaring is idempotent: the same arguments again are a
/// no-op, so every service declares what it uses on each connect.
package struct QueueTopology: Sendable {
    package struct Exchange: Sendable, Equatable {
        package let name: String
        package let type: String
    }

    package struct Queue: Sendable, Equatable {
        package let name: String
        package let arguments: [(String, AMQPFieldValue)]
        /// `(exchange, routing key)` pairs bound to this queue.
        package let bindings: [(String, String)]

        package static func == (lhs: Queue, rhs: Queue) -> Bool {
            lhs.name == rhs.name && lhs.arguments.map(\.0) == rhs.arguments.map(\.0)
                && lhs.arguments.map(\.1) == rhs.arguments.map(\.1)
                && lhs.bindings.map(\.0) == rhs.bindings.map(\.0) && lhs.bindings.map(\.1) == rhs.bindings.map(\.1)
        }
    }

    package let exchanges: [Exchange]
    package let queues: [Queue]

    /// Service Bus' MaxDeliveryCount: after this many deliveries a message is dead-lettered
    /// by the broker itself (a consumer that keeps crashing on it never acks it).
    package static let deliveryLimit: Int64 = 10
    package static let deadLetterExchange = "orbitcove.dead-letter"

    /// The work queue, its dead-letter queue and its retry hold queues, for each queue named.
    package static func forQueues(_ names: [QueueName], retry: RetryPolicy = .standard) -> QueueTopology {
        forQueues(named: names.map(\.rawValue), retry: retry)
    }

    /// The same shape for any queue name (tests use throwaway names and short delays).
    package static func forQueues(named names: [String], retry: RetryPolicy = .standard) -> QueueTopology {
        var queues: [Queue] = []
        for name in names {
            queues.append(
                Queue(
                    name: deadLetterQueue(for: name),
                    arguments: [("x-queue-type", .string("quorum"))],
                    bindings: [(deadLetterExchange, name)]))
            queues.append(
                Queue(
                    name: name,
                    arguments: [
                        ("x-queue-type", .string("quorum")),
                        ("x-delivery-limit", .int(deliveryLimit)),
                        ("x-dead-letter-exchange", .string(deadLetterExchange)),
                        ("x-dead-letter-routing-key", .string(name)),
                        ("x-dead-letter-strategy", .string("at-least-once")),
                        ("x-overflow", .string("reject-publish")),
                    ],
                    bindings: []))
            // A hold queue has no consumer: its messages expire after the queue's TTL and are
            // dead-lettered through the default exchange back into the work queue. One queue
            // per delay, so every message in it expires in order (no per-message TTL).
            for delay in retry.delays {
                queues.append(
                    Queue(
                        name: retry.holdQueue(for: name, delay: delay),
                        arguments: [
                            ("x-queue-type", .string("quorum")),
                            ("x-message-ttl", .int(delay.milliseconds)),
                            ("x-dead-letter-exchange", .string("")),
                            ("x-dead-letter-routing-key", .string(name)),
                            ("x-dead-letter-strategy", .string("at-least-once")),
                            ("x-overflow", .string("reject-publish")),
                        ],
                        bindings: []))
            }
        }
        return QueueTopology(exchanges: [Exchange(name: deadLetterExchange, type: "direct")], queues: queues)
    }

    package static func deadLetterQueue(for queue: String) -> String { "\(queue).dead-letter" }
}

/// How a failed message is tried again: after each failure it waits in a hold queue for the
/// next delay (the last delay repeats), until `maxAttempts` attempts have failed; then it is
/// dead-lettered with the last error as its reason.
package struct RetryPolicy: Sendable, Equatable {
    package let delays: [Duration]
    package let maxAttempts: Int

    /// 5 s, 30 s, then 5 min between attempts; five attempts in all (about 11 minutes).
    package static let standard = RetryPolicy(delays: [.seconds(5), .seconds(30), .seconds(300)], maxAttempts: 5)

    package init(delays: [Duration], maxAttempts: Int) {
        precondition(!delays.isEmpty && maxAttempts >= 1, "a retry policy needs a delay and an attempt")
        self.delays = delays
        self.maxAttempts = maxAttempts
    }

    /// The wait after failed attempt `attempt` (1-based), or nil when it was the last one.
    package func delay(afterAttempt attempt: Int) -> Duration? {
        guard attempt < maxAttempts else { return nil }
        return delays[min(attempt, delays.count) - 1]
    }

    package func holdQueue(for queue: String, delay: Duration) -> String {
        let milliseconds = delay.milliseconds
        let label =
            milliseconds % 60_000 == 0
            ? "\(milliseconds / 60_000)m" : milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
        return "\(queue).retry.\(label)"
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
