import Logging
import OrbitCoveModels
import ServiceLifecycle

/// A consumer of one of our queues whose deliveries go through `MessageHandlers`, and whose
/// failures go through a `RetryRouter`: the one way services build their queue workers.
package struct QueueWorker: Sendable {
    package let publisher: AMQPPublisher
    package let consumer: AMQPConsumer
    package let pruner: InboxPruner

    /// In start order: the publisher for retries and dead letters, then the consumer (so on
    /// shutdown the consumer drains before the publisher closes), then the inbox pruner.
    package var services: [any Service] { [publisher, consumer, pruner] }

    /// `/ready`: the broker is reachable when the consumer is consuming.
    package var readiness: ReadinessCheck {
        ReadinessCheck("rabbitmq") { [consumer] in
            guard consumer.isConsuming else { throw AMQPError.unexpected("the consumer is not connected") }
        }
    }

    package static func make(
        queue: QueueName, consumer: String, database: Database, settings: AMQPSettings, prefetch: Int = 16,
        retry: RetryPolicy = .standard, logger: Logger, register: (inout MessageHandlers) -> Void = { _ in }
    ) -> QueueWorker {
        make(
            queue: queue.rawValue, consumer: consumer, database: database, settings: settings, prefetch: prefetch,
            retry: retry, logger: logger, register: register)
    }

    /// The same for any queue name (tests use throwaway queues).
    package static func make(
        queue: String, consumer: String, database: Database, settings: AMQPSettings, prefetch: Int = 16,
        retry: RetryPolicy = .standard, logger: Logger, register: (inout MessageHandlers) -> Void = { _ in }
    ) -> QueueWorker {
        var handlers = MessageHandlers(consumer: consumer, database: database)
        register(&handlers)
        let dispatch = handlers
        let topology = QueueTopology.forQueues(named: [queue], retry: retry)
        var publisherSettings = settings
        publisherSettings.connectionName += "-retries"
        let publisher = AMQPPublisher(settings: publisherSettings, topology: topology, logger: logger)
        let router = RetryRouter(queue: queue, policy: retry, publisher: publisher, logger: logger)
        let amqpConsumer = AMQPConsumer(
            settings: settings, queue: queue, topology: topology, prefetch: prefetch, logger: logger
        ) { message in
            await router.settle(message, await dispatch.handle(message, logger: logger))
        }
        let pruner = InboxPruner(database: database, consumer: consumer, logger: logger)
        return QueueWorker(publisher: publisher, consumer: amqpConsumer, pruner: pruner)
    }
}
