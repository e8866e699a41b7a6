import Logging
import ServiceLifecycle

/// Runs `work` now and then every `interval` until graceful shutdown (or cancellation). A
/// round that fails is logged as `failure` and the next one comes as usual: housekeeping
/// (pruning, retention) must outlive a database that is briefly away.
package func runPeriodically(
    every interval: Duration, failure: Logger.Message, logger: Logger,
    _ work: @escaping @Sendable () async throws -> Void
) async {
    await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            do {
                try await work()
            } catch {
                logger.warning(failure, metadata: ["error": .string(logDescription(of: error))])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
