import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle

/// The core API: users, family members, communities, membership, invites, audit and sync.
/// Writes that others care about leave a message in the outbox, which the relay here
/// publishes; the retention jobs carry out the seed's deletion grace periods.
package enum CoreApplication {
    package static let defaultPort = 8082

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) throws -> ServiceParts {
        let settings = runtime.settings
        let core = try CoreSettings(environment: environment)
        let database = try Database(
            url: settings.databaseURL, connectionWait: settings.databaseWait, logger: runtime.logger("postgres"))
        let redis = try RedisClient(
            url: settings.redisURL, timeout: settings.redisTimeout, logger: runtime.logger("redis"))
        let publisher = AMQPPublisher(
            settings: try runtime.amqpSettings(role: "publisher"), topology: .forQueues(QueueName.allCases),
            logger: runtime.logger("amqp"))
        let relay = OutboxRelay(
            database: database, publisher: publisher, appId: settings.name, logger: runtime.logger("outbox"))
        let limiter = RateLimiter(redis: redis, logger: runtime.logger("rate-limits"))
        let cache = CommunityCache(redis: redis, ttlSeconds: core.cacheSeconds, logger: runtime.logger("cache"))
        let access = CommunityAccess(database: database, cache: cache, logger: runtime.logger("access"))
        let retention = RetentionJobs(
            database: database, cache: cache, interval: .seconds(core.retentionIntervalSeconds),
            logger: runtime.logger("retention"))

        let router = runtime.makeRouter(
            checks: [.postgres(database), .redis(redis), .rabbitmq(publisher)],
            verifier: runtime.makeTokenVerifier())
        router.add(
            middleware: UserRateLimitMiddleware(limiter: limiter, reads: core.readLimit, writes: core.writeLimit))
        router.add(middleware: IdempotencyMiddleware(database: database, logger: runtime.logger("idempotency")))

        func log(_ label: String) -> Logger { runtime.logger(label) }
        UserRoutes(store: UserStore(database: database, logger: log("users")), cache: cache).register(on: router)
        FamilyMemberRoutes(store: FamilyMemberStore(database: database, logger: log("family"))).register(on: router)
        CommunityRoutes(store: CommunityStore(database: database, logger: log("communities")), access: access)
            .register(on: router)
        MemberRoutes(store: MemberStore(database: database, logger: log("members")), access: access)
            .register(on: router)
        InviteRoutes(
            store: InviteStore(database: database, logger: log("invites")), access: access, limiter: limiter,
            lookupLimit: core.inviteLookupLimit
        ).register(on: router)
        AuditRoutes(database: database, access: access, logger: log("audit")).register(on: router)
        SyncRoutes(store: SyncStore(database: database, logger: log("sync")), access: access).register(on: router)
        return ServiceParts(router: router, services: [database.client, redis, publisher, relay, retention])
    }
}
