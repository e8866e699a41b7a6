import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle

/// The core API: users, communities and membership. Writes that others care about leave a
/// message in the outbox, which the relay here publishes.
package enum CoreApplication {
    package static let defaultPort = 8082

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(runtime: ServiceRuntime) throws -> ServiceParts {
        let settings = runtime.settings
        let database = try Database(url: settings.databaseURL, logger: runtime.logger("postgres"))
        let redis = try RedisClient(url: settings.redisURL, logger: runtime.logger("redis"))
        let publisher = AMQPPublisher(
            settings: try runtime.amqpSettings(role: "publisher"), topology: .forQueues(QueueName.allCases),
            logger: runtime.logger("amqp"))
        let relay = OutboxRelay(
            database: database, publisher: publisher, appId: settings.name, logger: runtime.logger("outbox"))

        let router = runtime.makeRouter(
            checks: [.postgres(database), .redis(redis), .rabbitmq(publisher)],
            verifier: runtime.makeTokenVerifier())
        CommunityRoutes(store: CommunityStore(database: database, logger: runtime.logger("communities")))
            .register(on: router)
        UserRoutes(store: UserStore(database: database, logger: runtime.logger("users"))).register(on: router)
        return ServiceParts(router: router, services: [database.client, redis, publisher, relay])
    }
}
