import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization

/// The reminders service: shared care reminders (routes under
/// `/api/v1/communities/{id}/reminders`), and a scheduler that fires event reminders, RSVP
/// nudges, dues reminders and care reminders exactly once across replicas. Due times live in
/// PostgreSQL (`reminder_schedule`), planned a horizon ahead from the events, dues and care
/// reminders themselves; core's messages on `reminders` say what changed. What fires goes
/// through the outbox to `notifications` as `reminder.due`.
package enum RemindersApplication {
    package static let defaultPort = 8085
    package static let consumerName = "reminders"

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) throws -> ServiceParts {
        let settings = try RemindersSettings(environment: environment)
        let kit = try ServiceKit(runtime: runtime)
        let wakeups = SchedulerWakeups()
        let horizon = ReminderHorizon(database: kit.database, logger: runtime.logger("horizon"), wakeups: wakeups)
        let worker = try kit.queueWorker(queue: .reminders, consumer: consumerName) { handlers in
            register(&handlers, horizon: horizon)
        }
        let router = kit.router(checks: [.postgres(kit.database), .redis(kit.redis), worker.readiness])
        let limiter = RateLimiter(redis: kit.redis, logger: runtime.logger("rate-limits"))
        router.add(
            middleware: UserRateLimitMiddleware(
                limiter: limiter, reads: settings.readLimit, writes: settings.writeLimit))
        router.add(middleware: IdempotencyMiddleware(database: kit.database, logger: runtime.logger("idempotency")))
        let store = CareStore(
            database: kit.database, writes: kit.writes, horizon: horizon, logger: runtime.logger("reminders"))
        CareRoutes(store: store).register(on: kit.communityRoutes(on: router))
        var firing = ReminderFiring(database: kit.database, logger: runtime.logger("scheduler"))
        firing.batchSize = settings.batchSize
        var scheduler = ReminderScheduler(firing: firing, wakeups: wakeups, logger: runtime.logger("scheduler"))
        scheduler.longestSleep = .seconds(settings.longestSleepSeconds)
        // Subjects nobody planned yet (what existed before the service, or before a restart
        // that lost a message) are looked for at the first pass and then once a day.
        let passes = Atomic<Int>(0)
        let perDay = max(1, 86_400 / settings.planSeconds)
        let planning = PeriodicJob(
            "reminder planning", every: .seconds(settings.planSeconds), logger: runtime.logger("horizon")
        ) {
            let pass = passes.add(1, ordering: .relaxed).oldValue
            try await horizon.fill(discovering: pass % perDay == 0)
        }
        return ServiceParts(router: router, services: kit.services + worker.services + [scheduler, planning])
    }

    /// Every message type core sends to `reminders`, so none is dead-lettered: each says what
    /// to plan again. A handler plans in the inbox's transaction and wakes the scheduler a
    /// moment later, once that transaction has committed.
    static func register(_ handlers: inout MessageHandlers, horizon: ReminderHorizon) {
        handlers.on(EventCreated.self) { envelope, connection, _ in
            try await horizon.eventsChanged(in: envelope.data.communityId, on: connection)
            horizon.wakeSoon()
        }
        handlers.on(EventUpdated.self) { envelope, connection, _ in
            try await horizon.eventsChanged(in: envelope.data.communityId, on: connection)
            horizon.wakeSoon()
        }
        handlers.on(DuesChanged.self) { envelope, connection, _ in
            var settings = CommunityReminders.Known()
            try await horizon.planDues(envelope.data.duesId, settings: &settings, on: connection)
            horizon.wakeSoon()
        }
        handlers.on(ReminderLeadsChanged.self) { envelope, connection, _ in
            try await horizon.allEvents(in: envelope.data.communityId, on: connection)
            horizon.wakeSoon()
        }
        // Its zone, reminder hours, nudge hours or dues days: everything it has is planned again.
        handlers.on(CommunityUpdated.self) { envelope, connection, _ in
            try await horizon.community(envelope.data.communityId, on: connection)
            horizon.wakeSoon()
        }
    }
}
