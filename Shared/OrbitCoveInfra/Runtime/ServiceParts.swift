import Hummingbird
import HummingbirdCore
import OrbitCoveModels
import ServiceLifecycle

/// What a service is made of: a router (with the operational endpoints), its long-lived
/// parts in start order, and the HTTP server it runs (HTTP/1.1, or with WebSocket upgrades for
/// the notifications service's realtime stream). `build` turns it into an application; tests
/// read its routes.
package struct ServiceParts {
    package let router: Router<AppRequestContext>
    package let services: [any Service]
    /// The HTTP server, made with the service's idle timeout (none given: `.enveloped`).
    package let server: (@Sendable (_ idleTimeout: Duration) -> HTTPServerBuilder)?

    package init(
        router: Router<AppRequestContext>, services: [any Service],
        server: (@Sendable (_ idleTimeout: Duration) -> HTTPServerBuilder)? = nil
    ) {
        self.router = router
        self.services = services
        self.server = server
    }

    /// A service that works one queue, built on the ``ServiceKit`` every service shares (so it
    /// can also gate community routes, publish through its outbox and run periodic jobs):
    /// `/ready` checks the database, Redis, the broker and the consumer. `addRoutes` adds the
    /// service's own routes, `jobs` its periodic work.
    package static func queueWorker(
        runtime: ServiceRuntime, queue: QueueName, consumer: String,
        register: (inout MessageHandlers) -> Void = { _ in },
        addRoutes: (Router<AppRequestContext>, ServiceKit) -> Void = { _, _ in },
        jobs: (ServiceKit) -> [PeriodicJob] = { _ in [] }
    ) throws -> ServiceParts {
        let kit = try ServiceKit(runtime: runtime)
        let worker = try kit.queueWorker(queue: queue, consumer: consumer, register: register)
        // The broker is checked through the consumer's own connection: no probe connection.
        let router = kit.router(checks: [.postgres(kit.database), .redis(kit.redis), worker.readiness])
        addRoutes(router, kit)
        return ServiceParts(router: router, services: kit.services + worker.services + jobs(kit))
    }
}
