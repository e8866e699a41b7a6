import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import OrbitCoveModels
import Prometheus
import ServiceLifecycle

/// What every service is built from: its settings, a logger, a metrics registry, and the
/// helpers that give each service the same router, middleware and operational endpoints.
package struct ServiceRuntime: Sendable {
    package let settings: ServiceSettings
    package let logger: Logger
    package let registry: PrometheusCollectorRegistry

    package init(settings: ServiceSettings, logger: Logger? = nil, registry: PrometheusCollectorRegistry = .init()) {
        self.settings = settings
        var logger = logger ?? Logger(label: settings.name)
        logger.logLevel = settings.logLevel
        self.logger = logger
        self.registry = registry
    }

    /// For an executable: JSON logs and Prometheus metrics for the whole process. Call once.
    package static func bootstrapProcess(settings: ServiceSettings) -> ServiceRuntime {
        JSONLogHandler.bootstrap(service: settings.name, level: settings.logLevel)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return ServiceRuntime(settings: settings, registry: registry)
    }

    package func logger(_ label: String) -> Logger {
        var logger = Logger(label: "\(settings.name).\(label)")
        logger.logLevel = settings.logLevel
        return logger
    }

    /// A router with request ids, error envelopes, metrics, one value a query parameter, token
    /// verification and the operational endpoints already in place; the service adds its own
    /// routes. `HEAD` is answered wherever `GET` is (``HeadResponder``, around the router:
    /// ``makeApplication(_:)``).
    package func makeRouter(checks: [ReadinessCheck], verifier: AccessTokenVerifier?) -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: RequestIdMiddleware(service: settings.name, trustedProxies: settings.trustedProxies))
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: RepeatedQueryParametersMiddleware())
        if let verifier { router.add(middleware: AuthenticationMiddleware(verifier: verifier)) }
        OperationalRoutes.add(to: router, service: settings.name, checks: checks, registry: registry)
        return router
    }

    /// The HTTP server plus the service's long-lived parts, in one `ServiceGroup`: started in
    /// the order given (dependencies first), stopped in reverse on SIGTERM or SIGINT. The router
    /// has all its routes by now, so here it learns to answer `405` for their other methods.
    package func makeApplication(_ parts: ServiceParts) -> some ApplicationProtocol {
        parts.router.answerUndeclaredMethods()
        var app = Application(
            responder: HeadResponder(parts.router.buildResponder()),
            server: parts.server?(settings.httpIdleTimeout) ?? .enveloped(idleTimeout: settings.httpIdleTimeout),
            configuration: .init(
                address: .hostname(settings.httpHost, port: settings.httpPort), serverName: settings.name),
            logger: logger)
        app.addServices(parts.services)
        return app
    }

    package func amqpSettings(role: String) throws -> AMQPSettings {
        try AMQPSettings(
            url: settings.amqpURL, heartbeatSeconds: settings.amqpHeartbeatSeconds,
            connectionName: "\(settings.name)-\(role)-\(ProcessInfo.processInfo.processIdentifier)")
    }

    /// Verifies access tokens against the auth service's JWKS, fetched with the process-wide
    /// HTTP client (which needs no shutdown, so a router built only to be inspected is safe).
    package func makeTokenVerifier() -> AccessTokenVerifier {
        AccessTokenVerifier(
            source: .url(settings.jwksURL, .shared), issuer: settings.tokenIssuer, audience: settings.tokenAudience,
            logger: logger("tokens"))
    }
}

extension ServiceRuntime {
    /// The whole of a service executable: configure the process, build, run until SIGTERM or
    /// SIGINT (exit 0), or log why it could not run and exit 1.
    package static func main<App: ApplicationProtocol>(
        name: String, defaultPort: Int, build: (ServiceRuntime) async throws -> App
    ) async -> Never {
        let settings: ServiceSettings
        do {
            settings = try ServiceSettings(name: name, defaultPort: defaultPort)
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            exit(1)
        }
        let runtime = bootstrapProcess(settings: settings)
        do {
            try await build(runtime).runService()
            exit(0)
        } catch {
            runtime.logger.critical(
                "service stopped on an error", metadata: ["error": .string(logDescription(of: error))])
            exit(1)
        }
    }
}
