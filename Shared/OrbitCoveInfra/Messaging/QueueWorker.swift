import Logging
import OrbitCoveModels

/// A consumer of one of our queues whose deliveries go through `MessageHandlers`: the one way
/// services build their queue workers. A message type nobody registered is dead-lettered.
package enum QueueWorker {
    package static func make(
        queue: QueueName, consumer: String, database: Database, settings: AMQPSettings, prefetch: Int = 16,
        logger: Logger, register: (inout MessageHandlers) -> Void = { _ in }
    ) -> AMQPConsumer {
        var handlers = MessageHandlers(consumer: consumer, database: database)
        register(&handlers)
        let dispatch = handlers
        return AMQPConsumer(
            settings: settings, queue: queue.rawValue, topology: .forQueues([queue]), prefetch: prefetch, logger: logger
        ) { message in
            await dispatch.handle(message, logger: logger)
        }
    }
}
