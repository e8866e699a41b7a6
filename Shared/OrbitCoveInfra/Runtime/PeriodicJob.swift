import Logging
import ServiceLifecycle

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
