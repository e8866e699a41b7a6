import Logging
import OrbitCoveModels
import ServiceLifecycle

/// A consumer of one of our queues whose deliveries go through `MessageHandlers`, and whose
/// failures go through a `RetryRouter`: the one way services build their queue workers.
package enum QueueWorker {
    /// The worker's services, in start order: the publisher for retries and dead letters, then
    /// the consumer (so on shutdown the consumer drains before the publisher closes), then the
    /// pruner of the consumer's old inbox entries.
    package static func make(
        queue: QueueName, consumer: String, database: Database, settings: AMQPSettings, prefetch: Int = 16,
        retry: RetryPolicy = .standard, logger: Logger, register: (inout MessageHandlers) -> Void = { _ in }
    ) -> [any Service] {
        make(
            queue: queue.rawValue, consumer: consumer, database: database, settings: settings, prefetch: prefetch,
            retry: retry, logger: logger, register: register)
    }

    /// The same for any queue name (tests use throwaway queues).
    package static func make(
        queue: String, consumer: String, database: Database, settings: AMQPSettings, prefetch: Int = 16,
        retry: RetryPolicy = .standard, logger: Logger, register: (inout MessageHandlers) -> Void = { _ in }
    ) -> [any Service] {
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
        return [publisher, amqpConsumer, pruner]
    }
}
