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

    /// Service Bus' MaxDeliveryCount: after this many deliveries a message is dead-lettered.
    package static let deliveryLimit: Int64 = 10
    package static let deadLetterExchange = "orbitcove.dead-letter"

    /// The work queue and its dead-letter queue, for each queue named.
    package static func forQueues(_ names: [QueueName]) -> QueueTopology {
        forQueues(named: names.map(\.rawValue))
    }

    /// The same shape for any queue name (tests use throwaway names).
    package static func forQueues(named names: [String]) -> QueueTopology {
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
        }
        return QueueTopology(exchanges: [Exchange(name: deadLetterExchange, type: "direct")], queues: queues)
    }

    package static func deadLetterQueue(for queue: String) -> String { "\(queue).dead-letter" }
}
