import Crypto
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A Lua script run by its SHA-1 (`EVALSHA`), loaded on demand.
package struct RedisScript: Sendable {
    package let source: String
    package let sha1: String

    package init(_ source: String) {
        self.source = source
        self.sha1 = Insecure.SHA1.hash(data: Data(source.utf8)).lowerHex
    }
}

/// Async Redis commands over a few blocking hiredis connections, each used by one of the
/// client's own threads at a time. A broken connection is discarded and replaced on next use.
package final class RedisClient: Service, Sendable {
    private let settings: RedisSettings
    private let threads: NIOThreadPool
    private let idle = Mutex<[ConnectionBox]>([])
    private let logger: Logger

    package init(settings: RedisSettings, connections: Int = 4, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: connections)
        threads.start()
    }

    package convenience init(url: URL, connections: Int = 4, logger: Logger) throws {
        self.init(settings: try RedisSettings(url: url), connections: connections, logger: logger)
    }

    package func command(_ arguments: [String]) async throws -> RedisReply {
        try await threads.runIfActive {
            let box = try self.idle.withLock { $0.popLast() } ?? ConnectionBox(RedisConnection(settings: self.settings))
            let reply = try box.connection.command(arguments)
            if !box.connection.isBroken { self.idle.withLock { $0.append(box) } }
            if case .error(let message) = reply, !message.hasPrefix("NOSCRIPT") { throw RedisError(message: message) }
            return reply
        }
    }

    package func get(_ key: String) async throws -> String? {
        try await command(["GET", key]).string
    }

    package func set(_ key: String, _ value: String, expiresIn seconds: Int) async throws {
        _ = try await command(["SET", key, value, "EX", String(seconds)])
    }

    @discardableResult
    package func delete(_ keys: [String]) async throws -> Int {
        guard !keys.isEmpty else { return 0 }
        return try await command(["DEL"] + keys).integer ?? 0
    }

    @discardableResult
    package func publish(channel: String, message: String) async throws -> Int {
        try await command(["PUBLISH", channel, message]).integer ?? 0
    }

    /// Runs a script by SHA; after a restart or `SCRIPT FLUSH` Redis answers `NOSCRIPT`, and the
    /// call is made once more with the script's source.
    package func evaluate(_ script: RedisScript, keys: [String], arguments: [String]) async throws -> RedisReply {
        let call = ["EVALSHA", script.sha1, String(keys.count)] + keys + arguments
        let reply = try await command(call)
        guard case .error(let message) = reply, message.hasPrefix("NOSCRIPT") else { return reply }
        // EVAL caches the script, so the next EVALSHA hits; unlike SCRIPT LOAD then EVALSHA, it
        // cannot lose a race with another SCRIPT FLUSH in between.
        let retried = try await command(["EVAL", script.source, String(keys.count)] + keys + arguments)
        if case .error(let message) = retried { throw RedisError(message: message) }
        return retried
    }

    package func ping() async throws {
        guard try await command(["PING"]).string == "PONG" else { throw RedisError(message: "unexpected PING reply") }
    }

    /// Messages published on `channels`, until the task is cancelled or graceful shutdown.
    /// Uses its own connection and thread, re-subscribing after a reconnect; pub/sub does not
    /// replay what was published while disconnected.
    package func subscribe(to channels: [String]) -> AsyncStream<(channel: String, message: String)> {
        let settings = self.settings
        let logger = self.logger
        return AsyncStream { continuation in
            let stop = StopFlag()
            let thread = Thread {
                RedisSubscriber(settings: settings, channels: channels, logger: logger).run(
                    stop: stop, deliver: { continuation.yield($0) })
                continuation.finish()
            }
            continuation.onTermination = { _ in stop.set() }
            thread.start()
        }
    }

    package func run() async throws {
        try? await gracefulShutdown()
        idle.withLock { $0.removeAll() }
        try await threads.shutdownGracefully()
    }
}

/// `@unchecked Sendable`: a connection is only ever used by the thread that took it out of
/// the idle list, and returned only after that use, so no two threads touch it at once.
private final class ConnectionBox: @unchecked Sendable {
    let connection: RedisConnection
    init(_ connection: RedisConnection) { self.connection = connection }
}

/// Tells a blocking loop on another thread to end.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
