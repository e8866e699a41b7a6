import Foundation
import OrbitCoveInfra

/// Settings of the reminders service beyond those every service shares (README lists them).
package struct RemindersSettings: Sendable {
    /// Per-user budgets, per minute, on the reminders routes (as core's).
    package var readsPerMinute: Int
    package var writesPerMinute: Int
    /// Rows claimed per firing transaction.
    package var batchSize: Int
    /// How often the planning pass tops up the horizon and plans what members changed unseen.
    package var planSeconds: Int
    /// The longest the scheduler sleeps without looking for rows another replica planned.
    package var longestSleepSeconds: Int

    package init(environment env: OrbitCoveInfra.Environment = .init()) throws {
        readsPerMinute = try env.int("ORBITCOVE_REMINDERS_READS_PER_MINUTE", default: 600)
        writesPerMinute = try env.int("ORBITCOVE_REMINDERS_WRITES_PER_MINUTE", default: 120)
        batchSize = try env.int("ORBITCOVE_REMINDERS_BATCH", default: 1_000, in: 1...10_000)
        planSeconds = try env.int("ORBITCOVE_REMINDERS_PLAN_SECONDS", default: 600, in: 1...86_400)
        longestSleepSeconds = try env.int("ORBITCOVE_REMINDERS_LONGEST_SLEEP_SECONDS", default: 20, in: 1...300)
    }

    var readLimit: RateLimit { RateLimit(name: "reminders-reads", limit: readsPerMinute, period: .seconds(60)) }
    var writeLimit: RateLimit { RateLimit(name: "reminders-writes", limit: writesPerMinute, period: .seconds(60)) }
}
