import OrbitCoveInfra

/// Settings of the core API beyond those every service shares (README lists them).
package struct CoreSettings: Sendable {
    /// Per-user budgets on every authenticated route, per minute.
    package var readsPerMinute: Int
    package var writesPerMinute: Int
    /// Invite codes looked up or redeemed, per user and per client address, per minute:
    /// 31^6 codes make guessing hopeless at this pace.
    package var inviteLookupsPerMinute: Int
    /// Fetches of one calendar feed per minute (calendar apps poll a few times an hour).
    package var feedFetchesPerMinute: Int
    /// How long community metadata and memberships stay in Redis (seconds).
    package var cacheSeconds: Int
    /// How often the retention jobs run (seconds).
    package var retentionIntervalSeconds: Int
    /// Where clients reach the API (the gateway): calendar feed addresses start with it.
    package var publicURL: String

    package init(environment env: OrbitCoveInfra.Environment = .init()) throws {
        readsPerMinute = try env.int("ORBITCOVE_CORE_READS_PER_MINUTE", default: 600)
        writesPerMinute = try env.int("ORBITCOVE_CORE_WRITES_PER_MINUTE", default: 120)
        inviteLookupsPerMinute = try env.int("ORBITCOVE_CORE_INVITE_LOOKUPS_PER_MINUTE", default: 10)
        feedFetchesPerMinute = try env.int("ORBITCOVE_CORE_FEED_FETCHES_PER_MINUTE", default: 30)
        cacheSeconds = try env.int("ORBITCOVE_CORE_CACHE_SECONDS", default: 900, in: 0...86_400)
        retentionIntervalSeconds = try env.int("ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS", default: 300)
        publicURL = try env.url("ORBITCOVE_PUBLIC_URL", default: "http://127.0.0.1:8080").absoluteString
        while publicURL.hasSuffix("/") { publicURL.removeLast() }
    }

    var readLimit: RateLimit { RateLimit(name: "core-reads", limit: readsPerMinute, period: .seconds(60)) }
    var writeLimit: RateLimit { RateLimit(name: "core-writes", limit: writesPerMinute, period: .seconds(60)) }
    var feedFetchLimit: RateLimit {
        RateLimit(name: "feed-fetches", limit: feedFetchesPerMinute, period: .seconds(60))
    }
    var inviteLookupLimit: RateLimit {
        RateLimit(name: "invite-lookups", limit: inviteLookupsPerMinute, period: .seconds(60))
    }
}
