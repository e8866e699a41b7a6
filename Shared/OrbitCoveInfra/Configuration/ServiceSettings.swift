import Foundation
import Logging

/// The settings every service shares. Service-specific settings live with the service.
package struct ServiceSettings: Sendable {
    package var name: String
    package var environment: String
    package var httpHost: String
    package var httpPort: Int
    /// How long a connection may be idle (no request part read and none being answered)
    /// before it is closed: longer than the gateway keeps its idle upstream connections (nginx,
    /// 60 s), so the gateway, not the service, closes those.
    package var httpIdleTimeout: Duration
    package var logLevel: Logger.Level
    package var databaseURL: URL
    package var amqpURL: URL
    package var amqpHeartbeatSeconds: Int
    package var redisURL: URL
    /// How long a request waits for Redis before it carries on without it.
    package var redisTimeout: Duration
    /// How long a request waits for a database connection before it answers 503.
    package var databaseWait: Duration
    /// The most connections the service's pool opens: replicas times this must stay under
    /// PostgreSQL's `max_connections`.
    package var databasePoolSize: Int
    /// Peers whose `X-Real-IP` is believed (the gateway); anyone else's address is their own.
    package var trustedProxies: TrustedProxies
    package var jwksURL: URL
    package var tokenIssuer: String
    package var tokenAudience: String

    package static let defaultDatabaseURL = "postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove"
    package static let defaultMigrationDatabaseURL =
        "postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:55432/orbitcove"
    package static let defaultAMQPURL = "amqp://orbitcove:orbitcove@127.0.0.1:55672/orbitcove"
    package static let defaultRedisURL = "redis://127.0.0.1:56379/0"

    package init(name: String, defaultPort: Int, environment env: Environment = Environment()) throws {
        self.name = name
        self.environment = env.string("ORBITCOVE_ENV", default: "development")
        self.httpHost = env.string("ORBITCOVE_HTTP_HOST", default: "127.0.0.1")
        self.httpPort = try env.int("ORBITCOVE_HTTP_PORT", default: defaultPort)
        self.httpIdleTimeout = .seconds(try env.int("ORBITCOVE_HTTP_IDLE_SECONDS", default: 75, in: 1...3600))
        let level = env.string("ORBITCOVE_LOG_LEVEL", default: "info")
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw ConfigurationError(variable: "ORBITCOVE_LOG_LEVEL", reason: "unknown level \(level)")
        }
        self.logLevel = logLevel
        self.databaseURL = try env.url("ORBITCOVE_DATABASE_URL", default: Self.defaultDatabaseURL)
        self.amqpURL = try env.url("ORBITCOVE_AMQP_URL", default: Self.defaultAMQPURL)
        self.amqpHeartbeatSeconds = try env.int("ORBITCOVE_AMQP_HEARTBEAT_SECONDS", default: 30)
        self.redisURL = try env.url("ORBITCOVE_REDIS_URL", default: Self.defaultRedisURL)
        self.redisTimeout = .milliseconds(try env.int("ORBITCOVE_REDIS_TIMEOUT_MS", default: 15, in: 1...5000))
        self.databaseWait = .milliseconds(try env.int("ORBITCOVE_DATABASE_WAIT_MS", default: 2000, in: 1...60_000))
        self.databasePoolSize = try env.int("ORBITCOVE_DATABASE_POOL_SIZE", default: 20, in: 1...500)
        self.trustedProxies = try TrustedProxies(env.list("ORBITCOVE_TRUSTED_PROXIES", default: ["127.0.0.1", "::1"]))
        self.jwksURL = try env.url("ORBITCOVE_JWKS_URL", default: "http://127.0.0.1:8081/.well-known/jwks.json")
        self.tokenIssuer = env.string("ORBITCOVE_TOKEN_ISSUER", default: "orbitcove-auth")
        self.tokenAudience = env.string("ORBITCOVE_TOKEN_AUDIENCE", default: "orbitcove-api")
    }
}
