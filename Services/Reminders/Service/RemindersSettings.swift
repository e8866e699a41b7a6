import Foundation
import OrbitCoveInfra

/// Settings of the reminders service beyond those every service shares (README lists them).
package struct RemindersSettings: Sendable {
    /// Per-user budgets, per minute, on the reminders routes (as core's).
    package var readsPerMinute: Int
    package var writesPerMinute: Int
    /// Rows claimed per firing transaction.
    package var batchSize: Int
    /// How often the horizon pass plans subjects whose horizon moved or that changed unseen.
    package var horizonSeconds: Int

    package init(environment env: OrbitCoveInfra.Environment = .init()) throws {
        readsPerMinute = try env.int("ORBITCOVE_REMINDERS_READS_PER_MINUTE", default: 600)
        writesPerMinute = try env.int("ORBITCOVE_REMINDERS_WRITES_PER_MINUTE", default: 120)
        batchSize = try env.int("ORBITCOVE_REMINDERS_BATCH", default: 1_000, in: 1...10_000)
        horizonSeconds = try env.int("ORBITCOVE_REMINDERS_HORIZON_SECONDS", default: 600, in: 1...86_400)
    }

    var readLimit: RateLimit { RateLimit(name: "reminders-reads", limit: readsPerMinute, period: .seconds(60)) }
    var writeLimit: RateLimit { RateLimit(name: "reminders-writes", limit: writesPerMinute, period: .seconds(60)) }
}
