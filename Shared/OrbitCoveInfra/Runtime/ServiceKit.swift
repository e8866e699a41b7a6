import Foundation
import Hummingbird
import OrbitCoveModels
import ServiceLifecycle

/// The parts every service is built from, made one way: PostgreSQL, Redis, the community
/// gate (with its cache) and the write path, a publisher with its outbox relay, a pool for
/// blocking work, and a router with the standard middleware. A feature adds routes on
/// ``communityRoutes(on:membersPage:)``, consumers through ``queueWorker(queue:consumer:register:)``
/// and periodic jobs as ``PeriodicJob``s; ``services`` lists the long-lived parts in start order.
///
/// Building a kit starts nothing: threads, pools and clients start when the service group runs
/// ``services`` and stop when it shuts down, so a kit built and never run leaves nothing behind.
package struct ServiceKit: Sendable {
    package let runtime: ServiceRuntime
    package let database: Database
    package let redis: RedisClient
    package let cache: CommunityCache
    package let gate: CommunityGate
    package let writes: CommunityWrites
    package let publisher: AMQPPublisher
    package let relay: OutboxRelay
    package let blocking: BlockingPool

    package init(runtime: ServiceRuntime, cacheSeconds: Int = 900, blockingThreads: Int = 2) throws {
        let settings = runtime.settings
        self.runtime = runtime
        database = try Database(
            url: settings.databaseURL, name: settings.name, maxConnections: settings.databasePoolSize,
            connectionWait: settings.databaseWait,
            logger: runtime.logger("postgres"))
        redis = try RedisClient(url: settings.redisURL, timeout: settings.redisTimeout, logger: runtime.logger("redis"))
        cache = CommunityCache(redis: redis, ttlSeconds: cacheSeconds, logger: runtime.logger("cache"))
        gate = CommunityGate(database: database, cache: cache, logger: runtime.logger("gate"))
        writes = CommunityWrites(database: database, cache: cache, logger: runtime.logger("writes"))
        publisher = AMQPPublisher(
            settings: try runtime.amqpSettings(role: "publisher"), topology: .forQueues(QueueName.allCases),
            logger: runtime.logger("amqp"))
        relay = OutboxRelay(
            database: database, publisher: publisher, appId: settings.name, logger: runtime.logger("outbox"))
        blocking = BlockingPool(threads: blockingThreads)
    }

    /// The long-lived parts, dependencies first (stopped in reverse).
    package var services: [any Service] {
        let cache = self.cache
        let invalidations = PeriodicJob(
            "cache invalidation retry", every: .seconds(5), logger: runtime.logger("cache")
        ) { await cache.retryPendingInvalidations() }
        return [database.service(), redis, publisher, relay, blocking, invalidations]
    }

    /// `/ready` checks of the shared parts.
    package var checks: [ReadinessCheck] { [.postgres(database), .redis(redis), .rabbitmq(publisher)] }

    /// A router with request ids, metrics, token verification and the operational routes;
    /// `/ready` runs `checks` (the kit's own by default).
    package func router(checks: [ReadinessCheck]? = nil) -> Router<AppRequestContext> {
        runtime.makeRouter(checks: checks ?? self.checks, verifier: runtime.makeTokenVerifier())
    }

    /// The group every route under `/api/v1/communities/:communityId` is registered on: its
    /// middleware resolves the caller's membership once, and its handlers receive it in a
    /// ``CommunityRequestContext`` (asking ``CommunityRequestContext/member(_:)``).
    package func communityRoutes(
        on router: Router<AppRequestContext>,
        membersPage: @escaping @Sendable (Request, AppRequestContext) -> Int? = { _, _ in nil }
    ) -> RouterGroup<CommunityRequestContext> {
        router.group("/api/v1/communities/:communityId")
            .add(middleware: CommunityGateMiddleware(gate: gate, membersPage: membersPage))
            .group(context: CommunityRequestContext.self)
    }

    /// A consumer of `queue` whose handlers are registered by `register`, with its retry
    /// publisher and inbox pruner. `prefetch` bounds the deliveries handled at once: a handler
    /// that holds much memory per message (the media worker's images) takes as many as it has
    /// threads for.
    package func queueWorker(
        queue: QueueName, consumer: String, prefetch: Int = 16, register: (inout MessageHandlers) -> Void
    ) throws -> QueueWorker {
        QueueWorker.make(
            queue: queue, consumer: consumer, database: database,
            settings: try runtime.amqpSettings(role: "consumer"), prefetch: prefetch,
            logger: runtime.logger("consumer"),
            register: register)
    }
}
