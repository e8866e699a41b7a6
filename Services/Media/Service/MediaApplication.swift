import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle

/// The media service: hands out signed upload URLs, checks uploads, makes each image's
/// renditions with libvips (the `media-processing` queue), redirects members to signed URLs
/// of them, and sweeps away the files of deleted media. Files live in the local store
/// (`make up`) or an S3-compatible bucket.
package enum MediaApplication {
    package static let defaultPort = 8084
    package static let consumerName = "media"

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) throws -> ServiceParts {
        // libvips and its loaders are checked at start-up: an image built without one fails
        // here, not every upload later.
        try Vips.started.get()
        let settings = try MediaSettings(
            environment: environment, production: runtime.settings.environment == "production")
        let kit = try ServiceKit(runtime: runtime, blockingThreads: settings.workers)
        let store = MediaStore(database: kit.database, logger: runtime.logger("media"))
        let storage = try objectStore(settings, kit: kit, runtime: runtime)
        let processor = MediaProcessor(
            store: store, objects: storage.store, blocking: kit.blocking, maxPixels: settings.maxPixels)
        // As many images at once as there are threads for them: each holds its upload and its
        // renditions in memory until it is recorded.
        let worker = try kit.queueWorker(
            queue: .mediaProcessing, consumer: consumerName, prefetch: settings.workers
        ) { handlers in
            handlers.on(
                MediaUploaded.self,
                prepare: { envelope, logger in try await processor.prepare(envelope, logger: logger) },
                apply: { envelope, outcome, connection, logger in
                    try await processor.apply(envelope, outcome, on: connection, logger: logger)
                })
        }
        let router = kit.router(checks: [.postgres(kit.database), .redis(kit.redis), worker.readiness])
        let limiter = RateLimiter(redis: kit.redis, logger: runtime.logger("rate-limits"))
        router.add(
            middleware: UserRateLimitMiddleware(
                limiter: limiter, reads: settings.readLimit, writes: settings.writeLimit))
        router.add(middleware: IdempotencyMiddleware(database: kit.database, logger: runtime.logger("idempotency")))
        let routes = MediaRoutes(
            store: store, objects: storage.store, gate: kit.gate, writes: kit.writes, settings: settings)
        routes.register(on: router)
        if let local = storage.store as? LocalObjectStore {
            LocalFileRoutes(files: local, store: store, media: routes).register(on: router)
        }
        let sweep = MediaSweep(database: kit.database, objects: storage.store, logger: runtime.logger("sweep"))
        let sweeping = PeriodicJob(
            "media sweep", every: .seconds(settings.sweepSeconds), logger: runtime.logger("sweep")
        ) {
            try await sweep.sweep()
        }
        return ServiceParts(
            router: router, services: kit.services + storage.services + worker.services + [sweeping])
    }

    /// The store the settings name, with the long-lived parts it needs (S3's HTTP client).
    static func objectStore(
        _ settings: MediaSettings, kit: ServiceKit, runtime: ServiceRuntime
    ) throws -> (store: any ObjectStore, services: [any Service]) {
        switch settings.storage {
        case .local:
            return (
                LocalObjectStore(
                    directory: settings.directory, signingKey: settings.signingKey, publicURL: settings.publicURL,
                    blocking: kit.blocking),
                []
            )
        case .s3:
            guard let s3 = settings.s3 else {
                throw ConfigurationError(variable: "ORBITCOVE_MEDIA_STORAGE", reason: "s3 needs its settings")
            }
            let client = HTTPClientService()
            return (S3ObjectStore(configuration: s3, client: client.running), [client])
        }
    }
}
