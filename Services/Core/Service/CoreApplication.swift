import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle

/// The core API: users, family members, communities, membership, invites, the calendar, audit
/// and sync.
/// Writes that others care about leave a message in the outbox, which the relay here
/// publishes; the retention jobs carry out the seed's deletion grace periods.
package enum CoreApplication {
    package static let defaultPort = 8082

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(
        runtime: ServiceRuntime, environment: OrbitCoveInfra.Environment = .init()
    ) throws -> ServiceParts {
        let core = try CoreSettings(environment: environment)
        let kit = try ServiceKit(runtime: runtime, cacheSeconds: core.cacheSeconds)
        let database = kit.database
        let limiter = RateLimiter(redis: kit.redis, logger: runtime.logger("rate-limits"))
        let events = EventRows(known: KnownEvents(limit: KnownEvents.serviceLimit))
        let retention = RetentionJobs(
            database: database, writes: kit.writes, interval: .seconds(core.retentionIntervalSeconds),
            departed: DepartedAnswers(events: events, logger: runtime.logger("retention")),
            logger: runtime.logger("retention"))

        let router = kit.router()
        router.add(
            middleware: UserRateLimitMiddleware(limiter: limiter, reads: core.readLimit, writes: core.writeLimit))
        router.add(middleware: IdempotencyMiddleware(database: database, logger: runtime.logger("idempotency")))
        let community = kit.communityRoutes(on: router, membersPage: MemberRoutes.firstPageHint)

        func log(_ label: String) -> Logger { runtime.logger(label) }
        UserRoutes(
            store: UserStore(database: database, writes: kit.writes, logger: log("users")), publicURL: core.publicURL
        ).register(on: router)
        FamilyMemberRoutes(
            store: FamilyMemberStore(
                database: database, writes: kit.writes,
                departed: DepartedAnswers(events: events, logger: log("family")), logger: log("family"))
        ).register(on: router)
        CommunityRoutes(
            store: CommunityStore(database: database, writes: kit.writes, logger: log("communities")),
            publicURL: core.publicURL
        ).register(on: router, community: community)
        MemberRoutes(
            store: MemberStore(
                database: database, writes: kit.writes,
                departed: DepartedAnswers(events: events, logger: log("members")),
                logger: log("members")),
            cache: kit.cache
        )
        .register(on: community)
        NotificationPreferencesRoutes(
            store: NotificationPreferencesStore(database: database, logger: log("notification-preferences"))
        ).register(on: community)
        InviteRoutes(
            store: InviteStore(database: database, writes: kit.writes, logger: log("invites")), gate: kit.gate,
            limiter: limiter, lookupLimit: core.inviteLookupLimit
        ).register(on: router, community: community)
        AuditRoutes(store: AuditStore(database: database, logger: log("audit"))).register(on: community)
        let expansions = KnownExpansions(limit: KnownExpansions.serviceLimit)
        let feeds = CalendarFeedStore(
            database: database, events: events, publicURL: core.publicURL, logger: log("calendar-feeds"))
        EventRoutes(
            store: EventStore(
                database: database, events: events, expansions: expansions,
                windows: KnownWindows(limit: KnownWindows.serviceLimit), logger: log("calendar")),
            editor: EventEditor(writes: kit.writes, events: events, logger: log("calendar")),
            answers: RSVPStore(database: database, events: events, logger: log("rsvps")),
            feeds: feeds
        ).register(on: community)
        CalendarFeedRoutes(feeds: feeds, gate: kit.gate, limiter: limiter, fetchLimit: core.feedFetchLimit)
            .register(on: router)
        FeedRoutes(
            store: PostStore(database: database, logger: log("feed")),
            writer: PostWriter(writes: kit.writes, logger: log("feed"))
        ).register(on: community)
        FinanceRoutes(
            store: LedgerStore(database: database, logger: log("finances")),
            writer: LedgerWriter(writes: kit.writes, logger: log("finances")),
            export: LedgerExport(database: database, logger: log("finances")),
            handles: PaymentHandleStore(database: database, logger: log("finances"))
        ).register(on: community)
        DuesRoutes(
            store: DuesStore(database: database, logger: log("dues")),
            writer: DuesWriter(writes: kit.writes, logger: log("dues"))
        ).register(on: community)
        SyncRoutes(engine: SyncEngine(database: database, registry: Self.syncRegistry, logger: log("sync")))
            .register(on: community)
        return ServiceParts(router: router, services: kit.services + [retention])
    }

    /// Every entity kind core syncs; a feature registers its own here.
    static var syncRegistry: SyncRegistry {
        var registry = SyncRegistry()
        registry.register(MemberSync.kind())
        registry.register(EventSync.kind())
        registry.register(PostSync.kind())
        registry.register(FinanceSync.transactions())
        registry.register(FinanceSync.dues())
        registry.register(MediaSync.kind())
        registry.register(ReminderSync.reminders())
        registry.register(ReminderSync.occurrences())
        return registry
    }
}
