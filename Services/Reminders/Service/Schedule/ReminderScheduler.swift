import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Fires due reminders as they fall due: after each round it sleeps until the next row is due
/// (at most `longestSleep`, so rows another replica planned are not missed for long) or until
/// this process planned a row (``SchedulerWakeups``, which ends the sleep). Idle, that is one
/// small transaction per `longestSleep` and no other wake-up. A replica that was down fires what fell
/// due while it was away at its first round, each message saying how late it is.
struct ReminderScheduler: Service {
    let firing: ReminderFiring
    let wakeups: SchedulerWakeups
    let logger: Logger
    var longestSleep: Duration = .seconds(20)
    /// A row due now that another replica holds is looked at again after this, not in a busy loop.
    var shortestSleep: Duration = .milliseconds(50)
    /// The rows claimed per batch now: halved after a batch fails for a reason of the moment (one
    /// too big to finish within the statement timeout after an outage, a row that always times
    /// out), doubled back after each batch that fires, up to the firing's own batch size.
    let limit = BatchLimit()

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var backoff = Backoff(base: .milliseconds(500), cap: .seconds(15))
            while !Task.isCancelled {
                let delay: Duration
                do {
                    delay = try await round()
                    backoff.reset()
                } catch {
                    if Task.isCancelled { break }
                    delay = backoff.next()
                    logger.warning(
                        "firing reminders failed; will retry",
                        metadata: ["error": .string(logDescription(of: error)), "retryIn": .stringConvertible(delay)])
                }
                _ = await wakeups.wait(until: ContinuousClock.now + delay)
            }
        }
    }

    /// Fires batches until nothing is due; how long to sleep then. A batch that fails with a
    /// database error is tried a row at a time, so one row that cannot fire (given up as
    /// `failed`) does not hold back the others; a failure that is the moment's
    /// (``Database/isPassing(_:)``) halves the batches and is thrown, for ``run()`` to back
    /// off and try again (``limit``).
    func round() async throws -> Duration {
        var next: Duration?
        while true {
            do {
                let batch = try await firing.fireBatch(limit: limit.current(most: firing.batchSize))
                if batch.claimed == 0 {
                    next = batch.nextDueIn
                    break
                }
                limit.fired(most: firing.batchSize)
            } catch let error as PSQLError where error.serverInfo != nil && Database.isPassing(error) {
                // Smaller batches from now on; down to one row, that row is tried alone and, if it
                // fails so again, waits a minute while the others fire.
                if limit.halve(most: firing.batchSize) { throw error }
                if try await firing.isolateFailure() { throw GaveUpARow() }
            } catch let error as PSQLError where error.serverInfo != nil {
                logger.warning(
                    "a batch of reminders failed; firing them one at a time",
                    metadata: ["error": .string(logDescription(of: error))])
                // After a row is given up, the rest wait for the backoff: if every row fails
                // (a fault of the database's, not of one row), rows are given up one per
                // backoff step rather than all at once.
                if try await firing.isolateFailure() { throw GaveUpARow() }
            } catch is ReminderReasons.UnknownKind {
                try await firing.isolateUnknown()
            }
        }
        guard let next else { return longestSleep }
        return min(longestSleep, max(shortestSleep, next))
    }
}

/// A row was given up: the scheduler backs off before the next round.
struct GaveUpARow: Error, CustomStringConvertible {
    var description: String { "a reminder could not be fired and was given up" }
}

/// The scheduler's batch size in use (see ``ReminderScheduler/limit``); nil until a failure has
/// made it smaller than the firing's own.
final class BatchLimit: Sendable {
    private let size = Mutex<Int?>(nil)

    func current(most: Int) -> Int { size.withLock { min($0 ?? most, most) } }

    /// Halves it; false when it was one row already.
    func halve(most: Int) -> Bool {
        size.withLock { size in
            let now = min(size ?? most, most)
            guard now > 1 else { return false }
            size = now / 2
            return true
        }
    }

    /// A batch fired: twice as many next time, up to the firing's own size (then nil again).
    func fired(most: Int) {
        size.withLock { size in
            guard let now = size else { return }
            size = now >= most / 2 ? nil : now * 2
        }
    }
}
