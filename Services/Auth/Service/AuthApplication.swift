import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// The auth service: issues access tokens and publishes the keys that verify them.
package enum AuthApplication {
    package static let defaultPort = 8081

    package static func build(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) async throws
        -> some ApplicationProtocol
    {
        runtime.makeApplication(try await parts(runtime: runtime, environment: environment))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init(),
        limits: AuthRateLimits = AuthRateLimits()
    ) async throws
        -> ServiceParts
    {
        let settings = runtime.settings
        let database = try Database(
            url: settings.databaseURL, maxConnections: settings.databasePoolSize, connectionWait: settings.databaseWait,
            logger: runtime.logger("postgres"))
        let redis = try RedisClient(
            url: settings.redisURL, timeout: settings.redisTimeout, logger: runtime.logger("redis"))
        let keys = try await SigningKeys.load(
            from: environment, development: settings.environment == "development", logger: runtime.logger("keys"))
        let issuer = TokenIssuer(keys: keys, issuer: settings.tokenIssuer, audience: settings.tokenAudience)
        // Auth verifies its own tokens from its own keys: no HTTP round trip to itself.
        let verifier = AccessTokenVerifier(
            source: .fixed(keys.published), issuer: settings.tokenIssuer, audience: settings.tokenAudience,
            logger: runtime.logger("tokens"))
        let apple = AppleIdentityVerifier(
            keys: JWKSKeyCache(
                source: .url(
                    try environment.url(
                        "ORBITCOVE_AUTH_APPLE_JWKS_URL", default: "https://appleid.apple.com/auth/keys"),
                    .shared),
                algorithm: .rs256, refetchInterval: .seconds(10), logger: runtime.logger("apple-keys")),
            audiences: Set(environment.list("ORBITCOVE_AUTH_APPLE_AUDIENCES", default: ["com.orbitcove.app"])))
        let sessions = Sessions(database: database, issuer: issuer, logger: runtime.logger("sessions"))
        let limiter = RateLimiter(redis: redis, logger: runtime.logger("ratelimit"))

        let router = runtime.makeRouter(checks: [.postgres(database), .redis(redis)], verifier: verifier)
        router.get("/.well-known/jwks.json") { _, _ in
            try Response.json(keys.document, headers: [.cacheControl: "public, max-age=300"])
        }
        SessionRoutes(sessions: sessions, apple: apple, limiter: limiter, limits: limits).register(on: router)
        if try environment.bool("ORBITCOVE_AUTH_DEV_LOGIN", default: false) {
            guard settings.environment != "production" else {
                throw ConfigurationError(variable: "ORBITCOVE_AUTH_DEV_LOGIN", reason: "not allowed in production")
            }
            runtime.logger.warning("development sign-in is enabled: never enable it in production")
            DevSignInRoutes(sessions: sessions, limiter: limiter, limits: limits).register(on: router)
        }
        return ServiceParts(router: router, services: [database.service(), redis])
    }
}
