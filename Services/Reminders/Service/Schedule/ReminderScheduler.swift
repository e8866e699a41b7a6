import Foundation
import Logging
import OrbitCoveInfra
import ServiceLifecycle

/// Fires due reminders as they fall due: after each round it sleeps until the next row is due
/// (at most `longestSleep`, so rows another replica planned are not missed for long), or until
/// this process plans a row (``ReminderHorizon/wake``). Idle, that is two small statements per
/// `longestSleep`. A replica that was down fires what fell due while it was away at its first
/// round, each message saying how late it is.
struct ReminderScheduler: Service {
    let firing: ReminderFiring
    /// This process's plans wake the scheduler (the same in-process signal the outbox relays use).
    let wakeups: OutboxWakeups
    let logger: Logger
    var longestSleep: Duration = .seconds(20)
    /// A row due now that another replica holds is retried after this, not in a busy loop.
    var shortestSleep: Duration = .milliseconds(50)

    func run() async throws {
        let woken = wakeups.stream()
        await cancelWhenGracefulShutdown {
            let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            let forward = Task { for await _ in woken { tick.yield() } }
            var sleeper: Task<Void, Never>?
            var backoff = Backoff(base: .milliseconds(500), cap: .seconds(15))
            tick.yield()
            for await _ in ticks {
                if Task.isCancelled { break }
                sleeper?.cancel()
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
                sleeper = Task {
                    try? await Task.sleep(for: delay)
                    if !Task.isCancelled { tick.yield() }
                }
            }
            sleeper?.cancel()
            forward.cancel()
        }
    }

    /// Fires batches until nothing is due; how long to sleep then.
    func round() async throws -> Duration {
        while try await firing.fireBatch() > 0 {}
        guard let next = try await firing.nextDue() else { return longestSleep }
        let seconds = next.timeIntervalSinceNow
        let wait = Duration.milliseconds(Int64(max(0, min(seconds, 3_600)) * 1000))
        return min(longestSleep, max(shortestSleep, wait))
    }
}
