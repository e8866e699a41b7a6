import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// The standard readiness checks, so every service words them the same way.
extension ReadinessCheck {
    package static func postgres(_ database: Database) -> ReadinessCheck {
        ReadinessCheck("postgres") { try await database.ping() }
    }

    /// Redis holds only caches and rate-limit state: without it a service still serves.
    package static func redis(_ redis: RedisClient) -> ReadinessCheck {
        ReadinessCheck("redis", critical: false) { try await redis.ping() }
    }

    package static func rabbitmq(_ publisher: AMQPPublisher) -> ReadinessCheck {
        ReadinessCheck("rabbitmq") { try await publisher.check() }
    }
}
