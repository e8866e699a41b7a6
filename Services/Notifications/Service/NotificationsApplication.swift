import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle

/// The notifications service: consumes the `notifications` queue into members' history
/// (``NotificationCatalog`` says who hears what), pushes to their devices, serves the history
/// and the device list, and holds members' realtime streams (``RealtimeStream``).
package enum NotificationsApplication {
    package static let defaultPort = 8083
    package static let consumerName = "notifications"

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) throws -> ServiceParts {
        let settings = try NotificationsSettings(environment: environment)
        let push = try provider(settings, runtime: runtime)
        let writer = HistoryWriter()
        var stream: RealtimeStream?
        let parts = try ServiceParts.queueWorker(
            runtime: runtime, queue: .notifications, consumer: consumerName,
            register: { handlers in
                NotificationCatalog.register(&handlers, writer: writer)
                let sender = PushSender(provider: push.provider, concurrency: settings.pushConcurrency)
                handlers.on(PushDue.self) { envelope, connection, logger in
                    try await sender.send(envelope.data.notificationIds, on: connection, logger: logger)
                }
            },
            addRoutes: { router, kit in
                let limiter = RateLimiter(redis: kit.redis, logger: runtime.logger("rate-limits"))
                router.add(
                    middleware: UserRateLimitMiddleware(
                        limiter: limiter, reads: settings.readLimit, writes: settings.writeLimit))
                let history = NotificationStore(database: kit.database, logger: runtime.logger("history"))
                NotificationRoutes(store: history).register(on: router)
                let realtime = RealtimeStream(
                    kit: kit, settings: settings.stream, unread: { try await history.unreadCount(for: $0, in: nil) },
                    logger: runtime.logger("stream"))
                realtime.register(on: router)
                stream = realtime
                DeviceRoutes(
                    store: DeviceStore(database: kit.database, logger: runtime.logger("devices")),
                    topics: settings.topics
                )
                .register(on: router)
            },
            jobs: { kit in
                NotificationHousekeeping(
                    database: kit.database, retentionDays: settings.retentionDays,
                    logger: runtime.logger("housekeeping")
                )
                .jobs(every: .seconds(settings.schedulerSeconds))
            })
        // The provider starts before the consumer that uses it, and stops after it; the stream
        // after the kit's database and Redis.
        guard let stream else { throw ConfigurationError(variable: "stream", reason: "not built") }
        return ServiceParts(
            router: parts.router, services: push.services + parts.services + stream.services,
            server: { idleTimeout in stream.server(idleTimeout: idleTimeout) })
    }

    private static func provider(
        _ settings: NotificationsSettings, runtime: ServiceRuntime
    ) throws -> (provider: any PushProvider, services: [any Service]) {
        switch settings.provider {
        case .log:
            return (LoggingPushProvider(logger: runtime.logger("push")), [])
        case .apns:
            guard let apns = settings.apns else {
                throw ConfigurationError(variable: "ORBITCOVE_PUSH_PROVIDER", reason: "apns needs its settings")
            }
            let provider = try APNsProvider(settings: apns, logger: runtime.logger("push"))
            return (provider, [provider])
        }
    }
}
