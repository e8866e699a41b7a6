import Logging
import NIOPosix
import ServiceLifecycle

/// Threads of a service's own for blocking or CPU-heavy work (libvips, big exports, file
/// I/O), so none of it runs on Swift's cooperative pool or on a consumer's connection thread.
/// Bounded: `threads` at once, the rest queue.
///
/// The threads start with the pool (a handler may be called before the service group has
/// run every service) and stop on graceful shutdown, after the work in hand.
package final class BlockingPool: Service, Sendable {
    private let pool: NIOThreadPool

    package init(threads: Int = 2) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    /// Runs `work` on one of the pool's threads and waits for it.
    package func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await pool.runIfActive(work)
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await pool.shutdownGracefully()
    }
}

/// A job that runs now and then every `interval` until graceful shutdown, as a `Service`
/// (housekeeping, due reminders): a failed round is logged and the next comes as usual.
package struct PeriodicJob: Service {
    let name: String
    let interval: Duration
    let logger: Logger
    let work: @Sendable () async throws -> Void

    package init(
        _ name: String, every interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    package func run() async throws {
        await runPeriodically(every: interval, failure: "\(name) failed", logger: logger, work)
    }
}
