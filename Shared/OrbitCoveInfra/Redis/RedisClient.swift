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

/// Async Redis commands over a few blocking hiredis connections, each used by one of the
/// client's own threads at a time. A broken connection is discarded and replaced on next use.
///
/// Redis sits in front of every request (rate limits, the cache), and it must never take the
/// API down with it, whether it refuses connections or hangs. So every command is bounded
/// three ways: a caller waits at most `timeout` for its reply (a few milliseconds), at most
/// `maxInFlight` commands are queued or running (beyond that a command fails at once instead
/// of queueing behind a hung server), and a circuit breaker stops calling Redis for a while
/// after a few failures in a row. A thread blocked on a hung server is freed by the socket
/// timeout, and its connection discarded. Callers treat every failure as a cache miss or a
/// rate limit that lets the request through.
///
/// The threads start when the service group runs the client and stop when it shuts down. A
/// command sent before the start waits for it (at most `startWait`: a loaded machine may take
/// seconds to start threads, and a command's few milliseconds are for Redis, not for that), then
/// has its `timeout`; one sent after the stop fails at once.
package final class RedisClient: Service, Sendable {
    private let settings: RedisSettings
    private let threads = ServiceResource<NIOThreadPool>("redis client")
    private let connections: Int
    private let idle = Mutex<[ConnectionBox]>([])
    private let logger: Logger
    private let timeout: Duration
    private let socketTimeout: Duration
    private let maxInFlight: Int
    private let inFlight = Atomic<Int>(0)
    package let breaker: CircuitBreaker
    private let failures: Counter

    package init(
        settings: RedisSettings, connections: Int = 4, timeout: Duration = .milliseconds(15),
        socketTimeout: Duration = .milliseconds(250), logger: Logger
    ) {
        self.settings = settings
        self.logger = logger
        self.timeout = timeout
        // A blocked thread is freed by the socket timeout; it must not cut replies that the
        // caller is still waiting for.
        self.socketTimeout = max(socketTimeout, timeout * 2)
        self.maxInFlight = connections * 8
        self.breaker = CircuitBreaker(name: "redis")
        self.failures = Counter(label: "orbitcove_redis_failures_total")
        self.connections = connections
    }

    package convenience init(
        url: URL, connections: Int = 4, timeout: Duration = .milliseconds(15), logger: Logger
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

    /// How long a command sent before the client runs waits for its threads to start.
    static let startWait = Duration.seconds(30)

    /// Runs one command on a pool thread, waiting at most `timeout` for it (after waiting for
    /// the threads to start, if they have not yet).
    private func bounded(_ arguments: [String]) async throws -> RedisReply {
        guard inFlight.add(1, ordering: .relaxed).newValue <= maxInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            throw RedisError.overloaded
        }
        let pool: NIOThreadPool
        do {
            pool = try await threads.running(deadline: .now + Self.startWait)
        } catch {
            inFlight.subtract(1, ordering: .relaxed)
            throw error is ServiceNotRunning ? RedisError(message: "\(error)") : error
        }
        let outcome = Outcome()
        let remaining = timeout
        return try await withCheckedThrowingContinuation { continuation in
            let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(remaining)) {
                if outcome.settle() { continuation.resume(throwing: RedisError(message: "timed out")) }
            }
            pool.submit { state in
                defer { self.inFlight.subtract(1, ordering: .relaxed) }
                let result: Result<RedisReply, any Error>
                if outcome.isSettled {
                    return  // Its caller stopped waiting while it queued: do not send it.
                } else if case .active = state {
                    result = Result { try self.runBlocking(arguments) }
                } else {
                    result = .failure(RedisError(message: "\(ServiceNotRunning(self.threads.name, stopped: true))"))
                }
                timer.cancel()
                if outcome.settle() { continuation.resume(with: result) }
            }
        }
    }

    private func runBlocking(_ arguments: [String]) throws -> RedisReply {
        let box =
            try idle.withLock { $0.popLast() }
            ?? ConnectionBox(RedisConnection(settings: settings, timeout: socketTimeout))
        let reply = try box.connection.command(arguments)
        if !box.connection.isBroken { idle.withLock { $0.append(box) } }
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
        try await threads.serveThreads(connections) { try? await gracefulShutdown() }
        // The threads are joined: no connection is in use any more.
        idle.withLock { $0.removeAll() }
    }
}

/// `@unchecked Sendable`: a connection is only ever used by the thread that took it out of
/// the idle list, and returned only after that use, so no two threads touch it at once.
private final class ConnectionBox: @unchecked Sendable {
    let connection: RedisConnection
    init(_ connection: RedisConnection) { self.connection = connection }
}

/// Who answers a command's caller first: its reply or its deadline.
private final class Outcome: Sendable {
    private let settled = Atomic<Bool>(false)
    /// True for the first caller only.
    func settle() -> Bool { !settled.exchange(true, ordering: .acquiringAndReleasing) }
    var isSettled: Bool { settled.load(ordering: .acquiring) }
}

/// Tells a blocking loop on another thread to end.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
