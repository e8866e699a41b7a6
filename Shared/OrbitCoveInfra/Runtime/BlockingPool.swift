import NIOPosix
import ServiceLifecycle

/// Threads of a service's own for blocking or CPU-heavy work (libvips, big exports, file
/// I/O), so none of it runs on Swift's cooperative pool or on a consumer's connection thread.
/// Bounded: `threads` at once, the rest queue.
///
/// The threads start when the service group runs the pool and stop on graceful shutdown,
/// after the work in hand. Work handed in before the start waits for it; work handed in after
/// the stop fails with ``ServiceNotRunning``.
package final class BlockingPool: Service, Sendable {
    private let threads: ServiceResource<NIOThreadPool>
    private let count: Int

    package init(threads: Int = 2) {
        self.threads = ServiceResource("blocking pool")
        self.count = max(1, threads)
    }

    /// Runs `work` on one of the pool's threads and waits for it.
    package func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await threads.run(work)
    }

    package func run() async throws {
        try await threads.serveThreads(count) { try? await gracefulShutdown() }
    }
}
