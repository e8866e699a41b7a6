import Foundation
import OrbitCoveInfra

/// Settings of the media service beyond those every service shares (README lists them).
package struct MediaSettings: Sendable {
    package enum Storage: String, Sendable {
        /// Files under ``MediaSettings/directory``, served through the gateway by this service.
        case local
        /// An S3-compatible bucket (AWS S3, MinIO, Ceph, R2), reached with our own SigV4.
        case s3
    }

    package var storage: Storage
    /// Where the local store keeps files.
    package var directory: String
    /// The key that signs the local store's URLs (every instance must share it).
    package var signingKey: String
    /// Where clients reach the API (the gateway): the local store's URLs start with it.
    package var publicURL: String
    package var s3: S3ObjectStore.Configuration?
    /// How long an upload URL and a download URL stay valid.
    package var uploadSeconds: Int
    package var downloadSeconds: Int
    /// Images with more pixels than this are refused from their header, before decoding.
    package var maxPixels: Int
    /// Images processed at once (each on its own thread of the kit's blocking pool).
    package var workers: Int
    /// Per-user budgets, per minute, on the media routes (as core's).
    package var readsPerMinute: Int
    package var writesPerMinute: Int
    /// How often the sweep removes deleted and abandoned files (seconds).
    package var sweepSeconds: Int

    /// In production the local store's signing key must be given; elsewhere a missing one is
    /// made up for this process (its URLs then die with it).
    package init(environment env: OrbitCoveInfra.Environment = .init(), production: Bool = false) throws {
        storage = try Self.storage(env.string("ORBITCOVE_MEDIA_STORAGE", default: "local"))
        directory = env.string("ORBITCOVE_MEDIA_DIRECTORY", default: ".local/media")
        signingKey = env.string("ORBITCOVE_MEDIA_SIGNING_KEY", default: "")
        publicURL = try env.url("ORBITCOVE_PUBLIC_URL", default: "http://127.0.0.1:8080").absoluteString
        while publicURL.hasSuffix("/") { publicURL.removeLast() }
        uploadSeconds = try env.int("ORBITCOVE_MEDIA_UPLOAD_SECONDS", default: 900, in: 60...3600)
        downloadSeconds = try env.int("ORBITCOVE_MEDIA_DOWNLOAD_SECONDS", default: 600, in: 60...86_400)
        // The C shims refuse more than 100 megapixels whatever this says (ORBIT_VIPS_MAX_PIXELS).
        maxPixels = try env.int("ORBITCOVE_MEDIA_MAX_PIXELS", default: 50_000_000, in: 1_000_000...100_000_000)
        workers = try env.int("ORBITCOVE_MEDIA_WORKERS", default: 2, in: 1...16)
        readsPerMinute = try env.int("ORBITCOVE_MEDIA_READS_PER_MINUTE", default: 600)
        writesPerMinute = try env.int("ORBITCOVE_MEDIA_WRITES_PER_MINUTE", default: 120)
        sweepSeconds = try env.int("ORBITCOVE_MEDIA_SWEEP_SECONDS", default: 60, in: 1...86_400)
        switch storage {
        case .local:
            if signingKey.isEmpty, !production {
                signingKey = randomBytes(32).lowerHex
            }
            guard signingKey.utf8.count >= 32 else {
                throw ConfigurationError(
                    variable: "ORBITCOVE_MEDIA_SIGNING_KEY",
                    reason: "the local store needs a key of 32 characters or more")
            }
        case .s3:
            func required(_ name: String) throws -> String {
                guard let value = env.optionalString(name), !value.isEmpty else {
                    throw ConfigurationError(variable: name, reason: "S3 storage needs it")
                }
                return value
            }
            s3 = S3ObjectStore.Configuration(
                endpoint: try env.url("ORBITCOVE_S3_ENDPOINT", default: "https://s3.amazonaws.com"),
                bucket: try required("ORBITCOVE_S3_BUCKET"),
                region: env.string("ORBITCOVE_S3_REGION", default: "us-east-1"),
                accessKeyId: try required("ORBITCOVE_S3_ACCESS_KEY_ID"),
                secretAccessKey: try required("ORBITCOVE_S3_SECRET_ACCESS_KEY"),
                sessionToken: env.optionalString("ORBITCOVE_S3_SESSION_TOKEN"),
                // MinIO, Ceph and moto want `endpoint/bucket/key`; AWS also takes `bucket.endpoint/key`.
                pathStyle: try env.bool("ORBITCOVE_S3_PATH_STYLE", default: true))
        }
    }

    private static func storage(_ name: String) throws -> Storage {
        guard let storage = Storage(rawValue: name) else {
            throw ConfigurationError(variable: "ORBITCOVE_MEDIA_STORAGE", reason: "local or s3, not \(name)")
        }
        return storage
    }

    var readLimit: RateLimit { RateLimit(name: "media-reads", limit: readsPerMinute, period: .seconds(60)) }
    var writeLimit: RateLimit { RateLimit(name: "media-writes", limit: writesPerMinute, period: .seconds(60)) }
}
