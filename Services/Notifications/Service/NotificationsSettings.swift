import Crypto
import Foundation
import OrbitCoveInfra

/// Settings of the notifications service beyond those every service shares (README lists them).
package struct NotificationsSettings: Sendable {
    package enum Provider: String, Sendable {
        /// Log each push and count it accepted: the local stack, without Apple's keys.
        case log
        /// Apple's push service, with a provider token.
        case apns
    }

    package var provider: Provider
    /// Set when `provider` is `.apns`.
    package var apns: APNsSettings?
    /// The app bundle ids devices may register for (empty: any).
    package var topics: Set<String>
    /// How long history rows stay.
    package var retentionDays: Int
    /// How often pushes deferred by quiet hours are looked for, and old rows pruned (seconds).
    package var schedulerSeconds: Int
    /// Pushes in flight at once for one push job.
    package var pushConcurrency: Int
    /// The realtime stream's bounds and pace.
    package var stream: StreamSettings
    /// Each user's budgets of requests per minute (history, devices, stream tickets).
    package var readsPerMinute: Int
    package var writesPerMinute: Int

    package init(environment env: Environment = .init()) throws {
        let name = "ORBITCOVE_PUSH_PROVIDER"
        guard let provider = Provider(rawValue: env.string(name, default: "log")) else {
            throw ConfigurationError(variable: name, reason: "must be log or apns")
        }
        self.provider = provider
        topics = Set(env.list("ORBITCOVE_APNS_TOPICS", default: []))
        apns = provider == .apns ? try APNsSettings(environment: env) : nil
        retentionDays = try env.int("ORBITCOVE_NOTIFICATIONS_RETENTION_DAYS", default: 90, in: 1...3650)
        schedulerSeconds = try env.int("ORBITCOVE_PUSH_SCHEDULER_SECONDS", default: 30, in: 1...3600)
        pushConcurrency = try env.int("ORBITCOVE_PUSH_CONCURRENCY", default: 100, in: 1...1000)
        stream = try StreamSettings(environment: env)
        readsPerMinute = try env.int("ORBITCOVE_NOTIFICATIONS_READS_PER_MINUTE", default: 600, in: 1...1_000_000)
        writesPerMinute = try env.int("ORBITCOVE_NOTIFICATIONS_WRITES_PER_MINUTE", default: 120, in: 1...1_000_000)
    }

    var readLimit: RateLimit { RateLimit(name: "notifications-reads", limit: readsPerMinute, period: .seconds(60)) }
    var writeLimit: RateLimit { RateLimit(name: "notifications-writes", limit: writesPerMinute, period: .seconds(60)) }
}

/// The realtime stream (`GET /api/v1/me/stream`).
package struct StreamSettings: Sendable {
    /// How often the instance that reads the change log reads it (milliseconds).
    package var pollMilliseconds: Int
    /// How often every shard hears from the reader even when nothing changed, so an instance
    /// that missed a publication finds out within this long (seconds).
    package var tickSeconds: Int
    /// Streams one user may hold open on one instance.
    package var maxStreamsPerUser: Int
    /// Communities one stream may follow.
    package var maxSubscriptions: Int
    /// Frames and batches waiting for one client before it is disconnected as too slow.
    package var sendBuffer: Int
    /// A ping every this many seconds; a client that has not answered the last one by the next
    /// is disconnected.
    package var heartbeatSeconds: Int

    package init(environment env: Environment = .init()) throws {
        pollMilliseconds = try env.int("ORBITCOVE_STREAM_POLL_MS", default: 100, in: 10...5000)
        tickSeconds = try env.int("ORBITCOVE_STREAM_TICK_SECONDS", default: 2, in: 1...60)
        maxStreamsPerUser = try env.int("ORBITCOVE_STREAM_MAX_PER_USER", default: 10, in: 1...1000)
        maxSubscriptions = try env.int("ORBITCOVE_STREAM_MAX_SUBSCRIPTIONS", default: 500, in: 1...10000)
        sendBuffer = try env.int("ORBITCOVE_STREAM_SEND_BUFFER", default: 1000, in: 10...100_000)
        heartbeatSeconds = try env.int("ORBITCOVE_STREAM_HEARTBEAT_SECONDS", default: 20, in: 1...600)
    }
}

/// Where and as whom to reach APNs.
package struct APNsSettings: Sendable {
    package var key: P256.Signing.PrivateKey
    package var keyId: String
    package var teamId: String
    package var productionURL: URL
    package var sandboxURL: URL
    /// Extra trust for the push endpoint's certificate (a local stand-in); nil trusts the system's roots.
    package var caFile: String?

    init(environment env: Environment) throws {
        let keyVariable = "ORBITCOVE_APNS_KEY_FILE"
        guard let path = env.optionalString(keyVariable) else {
            throw ConfigurationError(variable: keyVariable, reason: "is required when ORBITCOVE_PUSH_PROVIDER is apns")
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: try String(contentsOfFile: path, encoding: .utf8))
        } catch {
            throw ConfigurationError(variable: keyVariable, reason: "not a readable PEM P-256 key (an APNs .p8 file)")
        }
        keyId = try Self.identifier(env, "ORBITCOVE_APNS_KEY_ID")
        teamId = try Self.identifier(env, "ORBITCOVE_APNS_TEAM_ID")
        productionURL = try env.url("ORBITCOVE_APNS_PRODUCTION_URL", default: "https://api.push.apple.com")
        sandboxURL = try env.url("ORBITCOVE_APNS_SANDBOX_URL", default: "https://api.sandbox.push.apple.com")
        caFile = env.optionalString("ORBITCOVE_APNS_CA_FILE")
    }

    /// Apple's key and team ids: ten letters and digits.
    private static func identifier(_ env: Environment, _ name: String) throws -> String {
        guard let value = env.optionalString(name), value.utf8.count == 10,
            value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { throw ConfigurationError(variable: name, reason: "must be Apple's 10-character identifier") }
        return value
    }
}
