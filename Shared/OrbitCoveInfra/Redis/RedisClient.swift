import Crypto
import Foundation
import Logging
import Metrics
import NIOCore
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

/// Async Redis commands, pipelined over a few connections on the shared NIO event loops
/// (``RedisPipelines``): many commands in flight on each connection, and no thread of the
/// client's own, so a command costs its caller no thread hop but the event loop's.
///
/// Redis sits in front of every request (rate limits, the cache), and it must never take the
/// API down with it, whether it refuses connections or hangs. So every command is bounded three
/// ways: a caller waits at most `timeout` for its reply (a few milliseconds, opening the
/// connection included), at most 512 commands per connection are outstanding (`inFlight`:
/// beyond that a command fails at once instead of piling up behind a hung server), and a
/// circuit breaker stops calling Redis for a while after a few failures in a row. A connection
/// whose oldest command has had no reply for `socketTimeout` is closed, failing what waits on
/// it, and replaced on next use. A caller that gave up keeps its place on its connection (its
/// late reply is read and dropped), so the replies after it still reach their own callers.
/// Callers treat every failure as a cache miss or a rate limit that lets the request through.
///
/// Connections open when the service group runs the client (on first use) and close when it
/// shuts down. A command sent before the start waits for it (at most `startWait`: a loaded
/// machine may take seconds to start a service group, and a command's few milliseconds are for
/// Redis, not for that), then has its `timeout`; one sent after the stop fails at once.
package final class RedisClient: Service, Sendable {
    private let settings: RedisSettings
    private let pipelines = ServiceResource<RedisPipelines>("redis client")
    private let connections: Int
    private let logger: Logger
    private let timeout: Duration
    private let socketTimeout: Duration
    /// Commands outstanding, from their call until their reply is read or their connection
    /// closed (a caller that timed out still counts while Redis owes its reply).
    private let inFlight: CommandBudget
    package let breaker: CircuitBreaker
    private let failures: Counter

    /// - Parameter connections: sockets to Redis, each with many commands in flight; Redis runs
    ///   one command at a time, so more sockets mostly split the batches.
    package init(
        settings: RedisSettings, connections: Int = 2, timeout: Duration = .milliseconds(15),
        socketTimeout: Duration = .milliseconds(250), logger: Logger
    ) {
        self.settings = settings
        self.logger = logger
        self.timeout = timeout
        // A connection is closed by the socket timeout; it must not cut replies that a caller
        // is still waiting for.
        self.socketTimeout = max(socketTimeout, timeout * 2)
        // A pipelined command waiting is a few bytes, not a thread; the bound only caps what a
        // hung server collects before the socket timeout closes its connection.
        self.inFlight = CommandBudget(limit: max(1, connections) * 512)
        self.breaker = CircuitBreaker(name: "redis")
        self.failures = Counter(label: "orbitcove_redis_failures_total")
        self.connections = connections
    }

    package convenience init(
        url: URL, connections: Int = 2, timeout: Duration = .milliseconds(15), logger: Logger
    )
        throws
    {
        self.init(settings: try RedisSettings(url: url), connections: connections, timeout: timeout, logger: logger)
    }

    package func command(_ arguments: [String]) async throws -> RedisReply {
        guard breaker.allowsCall() else { throw RedisError.unavailable }
        do {
            let reply = try await bounded(arguments)
            breaker.succeeded()
            return reply
        } catch let error as RedisError where error.isReply {
            breaker.succeeded()  // Redis answered; the command was wrong, not the server.
            throw error
        } catch let error as RedisError where error.isLocalOverload {
            // Our own queue is full: a burst of requests, not a sign that Redis is failing (and
            // counting it would let anyone open the breaker, and so the rate limits, at will).
            failures.increment()
            throw error
        } catch {
            failures.increment()
            breaker.failed()
            throw error
        }
    }

    /// How long a command sent before the client runs waits for it to start.
    static let startWait = Duration.seconds(30)

    /// Sends one command and waits at most `timeout` for its reply (after waiting for the
    /// client to start, if it has not yet). An error reply is thrown, except `NOSCRIPT`, which
    /// ``evaluate(_:keys:arguments:)`` answers.
    private func bounded(_ arguments: [String]) async throws -> RedisReply {
        guard inFlight.take() else { throw RedisError.overloaded }
        let pipelines: RedisPipelines
        do {
            pipelines = try await self.pipelines.running(deadline: .now + Self.startWait)
        } catch {
            inFlight.release()
            throw error is ServiceNotRunning ? RedisError(message: "\(error)") : error
        }
        let reply = try await pipelines.send(arguments, deadline: .now() + TimeAmount(timeout)).get()
        if case .error(let message) = reply, !message.hasPrefix("NOSCRIPT") {
            throw RedisError(message: message, isReply: true)
        }
        return reply
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

    /// Readiness: fails at once while the breaker is open, which `/ready` reports as degraded.
    package func ping() async throws {
        guard try await command(["PING"]).string == "PONG" else { throw RedisError(message: "unexpected PING reply") }
    }

    /// Messages published on `channels`, until the task is cancelled or graceful shutdown.
    /// Uses its own connection and thread, re-subscribing after a reconnect; pub/sub does not
    /// replay what was published while disconnected. `name` names the connection in Redis's
    /// `CLIENT LIST`.
    package func subscribe(
        to channels: [String], name: String? = nil
    ) -> AsyncStream<(channel: String, message: String)> {
        let settings = self.settings
        let logger = self.logger
        return AsyncStream { continuation in
            let stop = AtomicFlag()
            let thread = Thread {
                RedisSubscriber(settings: settings, channels: channels, name: name, logger: logger).run(
                    stop: stop, deliver: { continuation.yield($0) })
                continuation.finish()
            }
            continuation.onTermination = { _ in stop.set() }
            thread.start()
        }
    }

    package func run() async throws {
        let configuration = RedisPipelines.Configuration(
            settings: settings, socketTimeout: TimeAmount(socketTimeout), budget: inFlight,
            stopped: RedisError(message: "\(ServiceNotRunning(pipelines.name, stopped: true))"), logger: logger)
        try await pipelines.serve(
            make: {
                RedisPipelines(
                    connections: connections, configuration: configuration, group: MultiThreadedEventLoopGroup.singleton
                )
            },
            close: { await $0.close() },
            while: { _ in try? await gracefulShutdown() })
    }
}
