import Hummingbird
import OrbitCoveModels
import ServiceLifecycle

/// What a service is made of: a router (with the operational endpoints) and its long-lived
/// parts in start order. `build` turns it into an application; tests read its routes.
package struct ServiceParts {
    package let router: Router<AppRequestContext>
    package let services: [any Service]

    package init(router: Router<AppRequestContext>, services: [any Service]) {
        self.router = router
        self.services = services
    }

    /// A service that works one queue: database, Redis, token verification and the queue
    /// worker, with `/ready` checking all of them. `addRoutes` adds the service's own routes.
    package static func queueWorker(
        runtime: ServiceRuntime, queue: QueueName, consumer: String,
        register: (inout MessageHandlers) -> Void = { _ in },
        addRoutes: (Router<AppRequestContext>, Database) -> Void = { _, _ in }
    ) throws -> ServiceParts {
        let settings = runtime.settings
        let database = try Database(
            url: settings.databaseURL, connectionWait: settings.databaseWait, logger: runtime.logger("postgres"))
        let redis = try RedisClient(
            url: settings.redisURL, timeout: settings.redisTimeout, logger: runtime.logger("redis"))
        let consumerSettings = try runtime.amqpSettings(role: "consumer")
        let worker = QueueWorker.make(
            queue: queue, consumer: consumer, database: database, settings: consumerSettings,
            logger: runtime.logger("consumer"), register: register)
        let router = runtime.makeRouter(
            checks: [.postgres(database), .redis(redis), worker.readiness],
            verifier: runtime.makeTokenVerifier())
        addRoutes(router, database)
        return ServiceParts(router: router, services: [database.client, redis] + worker.services)
    }
}
