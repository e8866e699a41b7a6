import NIOPosix

/// Short-lived connections for checks and operator tasks, off the cooperative pool.
package enum AMQPProbe {
    /// Opens and closes a connection, to see that the broker answers.
    package static func check(_ settings: AMQPSettings) async throws {
        try await NIOThreadPool.singleton.runIfActive {
            _ = try AMQPConnection(settings: settings)
        }
    }

    /// Ready-plus-unacknowledged messages and consumers of a queue.
    package static func depth(of queue: String, settings: AMQPSettings) async throws -> (messages: Int, consumers: Int)
    {
        try await NIOThreadPool.singleton.runIfActive {
            try AMQPConnection(settings: settings).inspect(queue: queue)
        }
    }

    package static func deleteQueue(_ queue: String, settings: AMQPSettings) async throws {
        try await NIOThreadPool.singleton.runIfActive {
            try AMQPConnection(settings: settings).deleteQueue(queue)
        }
    }
}
