import NIOPosix

/// Opens and closes a connection, off the cooperative pool, to see that the broker answers.
package enum AMQPProbe {
    package static func check(_ settings: AMQPSettings) async throws {
        try await NIOThreadPool.singleton.runIfActive {
            _ = try AMQPConnection(settings: settings)
        }
    }
}
