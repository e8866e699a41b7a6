import Foundation
import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOPosix
import NIOWebSocket
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing
import WSClient

@testable import NotificationsService

/// `GET /api/v1/me/stream` over real WebSockets, against the notifications service running
/// live beside core, with the real PostgreSQL and Redis: every change arrives once, with a
/// token to resume from, and nothing arrives that the caller may not see.
@Suite struct StreamTests {
    typealias Person = CoreHarness.Person

    /// Runs `count` notifications services live (each with its own hub; one of all the tests'
    /// services reads the change log) and hands their ports to `body`.
    static func run(
        _ api: CoreHarness, instances count: Int = 1, settings: [String: String] = [:],
        _ body: @Sendable ([Int]) async throws -> Void
    ) async throws {
        try await start(api, count, settings, ports: [], body)
    }

    private static func start(
        _ api: CoreHarness, _ count: Int, _ settings: [String: String], ports: [Int],
        _ body: @Sendable ([Int]) async throws -> Void
    ) async throws {
        guard ports.count < count else { return try await body(ports) }
        // These services consume the shared `notifications` queue too (the unread count needs
        // a consumer): they push, like every other test's, to the shared APNs stand-in (with the
        // log provider another test's push would be written to a log and never reach the
        // stand-in that test watches).
        let apns = try await SharedAPNs.shared.start().settings
        let runtime = try TestEnvironment.runtime(
            name: "orbitcove-notifications",
            extra: ["ORBITCOVE_JWKS_URL": api.jwksURL].merging(settings) { _, new in new })
        let environment = apns.merging(["ORBITCOVE_STREAM_TICK_SECONDS": "1"]) { _, new in new }
            .merging(settings) { _, new in new }
        let app = runtime.makeApplication(
            try NotificationsApplication.parts(runtime: runtime, environment: Environment(environment)))
        // A failure inside is thrown once the service has stopped gracefully: thrown through
        // the test application it would cancel the service instead (every part at once, which
        // is not how it stops in production).
        let failure = Mutex<(any Error)?>(nil)
        try await app.test(.live) { client in
            do {
                try await start(api, count, settings, ports: ports + [try #require(client.port)], body)
            } catch {
                failure.withLock { $0 = error }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// How many sessions hold the advisory lock `key` (below 2^31: PostgreSQL shows it as
    /// `classid` 0, `objid` the key).
    static func lockHolders(_ key: Int64) async throws -> Int {
        try await withTestDatabase { observer in
            try await observer.systemQuery(
                """
                SELECT count(*)::int FROM pg_locks
                WHERE locktype = 'advisory' AND classid = 0 AND objid::text::bigint = \(key) AND granted
                """
            ).first?.decode(Int.self) ?? 0
        }
    }

    static func syncToken(_ api: CoreHarness, _ club: Community, as person: Person) async throws -> String {
        try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: person).data(CommunitySync.self).syncToken
    }

    static func post(_ api: CoreHarness, in club: Community, by person: Person, _ text: String) async throws -> UUID {
        try await FeedTests.post(api, in: club, by: person, #"{"content":"\#(text)"}"#).id
    }

    @Test func aChangeArrivesOnceWithATokenThatResumesWithoutGapOrRepeat() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let token = try await Self.syncToken(api, club, as: ada)
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.subscribe(club.id, from: token)
                let first = try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                #expect(first.first?.type == .unread && first.first?.count == 0)

                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Practice","startsAt":"2031-03-01T17:00:00Z"}"#)
                let created = try await stream.wait(for: "the event") { _ in !stream.changes(of: event.id).isEmpty }
                let change = try #require(created.last { $0.id == event.id })
                #expect(change.kind == "event" && change.operation == "insert" && change.communityId == club.id)
                let resumeFrom = try #require(change.syncToken)
                await stream.close()

                // While Ada is away: the event moves, a post is written.
                let moved = try await api.call(
                    .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach,
                    json: #"{"title":"Practice (moved)"}"#)
                #expect(moved.status == .ok)
                let post = try await Self.post(api, in: club, by: coach, "Bring water")

                let again = StreamProbe.open(port: ports[0], as: ada)
                try again.subscribe(club.id, from: resumeFrom)
                try await again.wait(for: "the resumed subscription") { $0.contains { $0.type == .subscribed } }
                #expect(again.changes(of: event.id).map(\.operation) == ["update"])
                #expect(again.changes(of: post).map(\.operation) == ["insert"])
                // The same as sync says changed since that token.
                let sync = try await api.call(
                    .get, "/api/v1/communities/\(club.id)/sync?since=\(resumeFrom)", as: ada
                ).data(CommunitySync.self)
                #expect(sync.events.updated.count == 1 && sync.posts.created.count == 1)

                // Live again, once.
                let second = try await Self.post(api, in: club, by: coach, "And snacks")
                try await again.wait(for: "the live post") { _ in !again.changes(of: second).isEmpty }
                try await Task.sleep(for: .seconds(1.5))
                #expect(again.changes(of: second).count == 1)
                #expect(again.changes(of: post).count == 1 && again.changes(of: event.id).count == 1)
                await again.close()
            }
        }
    }

    @Test func answersReactionsAndVotesReachTheStream() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let token = try await Self.syncToken(api, club, as: ada)
            let event = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T17:00:00Z"}"#)
            let post = try await Self.post(api, in: club, by: coach, "Who is coming?")
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.subscribe(club.id, from: token)
                try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                let answered = try await api.call(
                    .post, "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp", as: coach,
                    json: #"{"status":"yes"}"#)
                #expect(answered.status == .ok || answered.status == .created)
                let reacted = try await api.call(
                    .post, "/api/v1/communities/\(club.id)/posts/\(post)/reactions", as: coach,
                    json: #"{"type":"like"}"#)
                #expect(reacted.status.code < 300)
                let frames = try await stream.wait(for: "the answer and the reaction") { frames in
                    frames.contains { $0.kind == "answers" && $0.id == event.id }
                        && frames.contains { $0.kind == "reactions" && $0.id == post }
                }
                #expect(frames.allSatisfy { $0.type != .change || $0.communityId == club.id })
                await stream.close()
            }
        }
    }

    @Test func theUnreadCountFollowsTheCallersNotifications() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                #expect(stream.frames.first?.count == 0)
                // A new event notifies Ada: her count follows without a subscription.
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Practice","startsAt":"2031-05-01T17:00:00Z"}"#)
                try await stream.wait(for: "a count of one") { frames in
                    frames.contains { $0.type == .unread && $0.count == 1 }
                }
                await stream.close()
            }
        }
    }

    @Test func aCommunityTheCallerIsNotInIsRefusedAndTheRestServed() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let other = try await api.community(by: coach)
            let token = try await Self.syncToken(api, club, as: ada)
            let stale = SyncToken(snapshot: "10:10:", issuedAt: Date().addingTimeInterval(-81 * 24 * 3600)).text
            let third = try await api.community(by: ada)
            // A community deleted (still restorable, its memberships kept) is not served either.
            let deleted = try await api.community(by: ada)
            #expect(try await api.call(.delete, "/api/v1/communities/\(deleted.id)", as: ada).status == .noContent)
            // Without a token: Ada's own is reset, another's refused like any other (found by a
            // probe: every community asked without a token was reset, hers or not).
            let (fourth, stranger) = (try await api.community(by: ada), try await api.community(by: coach))
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.send(
                    StreamClientFrame(
                        type: .subscribe,
                        communities: [
                            StreamSubscription(communityId: other.id, syncToken: token),
                            StreamSubscription(communityId: club.id, syncToken: token),
                            StreamSubscription(communityId: third.id, syncToken: stale),
                            StreamSubscription(communityId: UUID(), syncToken: "bm9wZQ"),
                            StreamSubscription(communityId: deleted.id, syncToken: token),
                            StreamSubscription(communityId: fourth.id, syncToken: nil),
                            StreamSubscription(communityId: stranger.id, syncToken: nil),
                        ]))
                let frames = try await stream.wait(for: "seven answers") { frames in
                    frames.filter { [.subscribed, .refused, .reset].contains($0.type) }.count == 7
                }
                #expect(frames.contains { $0.type == .reset && $0.communityId == fourth.id })
                #expect(
                    frames.contains {
                        $0.type == .refused && $0.communityId == stranger.id && $0.code == "COMMUNITY_NOT_FOUND"
                    })
                #expect(
                    frames.contains {
                        $0.type == .refused && $0.communityId == deleted.id && $0.code == "COMMUNITY_NOT_FOUND"
                    })
                #expect(
                    frames.contains {
                        $0.type == .refused && $0.communityId == other.id && $0.code == "COMMUNITY_NOT_FOUND"
                    })
                #expect(frames.contains { $0.type == .subscribed && $0.communityId == club.id })
                #expect(frames.contains { $0.type == .reset && $0.communityId == third.id })
                #expect(frames.contains { $0.type == .refused && $0.code == "VALIDATION_FAILED" })
                // The other community's changes never reach Ada; the club's do.
                let hidden = try await Self.post(api, in: other, by: coach, "Admins only")
                let shown = try await Self.post(api, in: club, by: coach, "Everyone")
                try await stream.wait(for: "the club's post") { _ in !stream.changes(of: shown).isEmpty }
                try await Task.sleep(for: .seconds(1.5))
                #expect(stream.changes(of: hidden).isEmpty)
                #expect(stream.frames.allSatisfy { $0.type != .change || $0.communityId == club.id })
                // More communities than a stream follows, in one frame (none of them Ada's): each
                // is answered by name, and the frame costs no more than the largest a stream
                // follows (a probe's: it closed the stream as "too many frames").
                let many = (0..<600).map { _ in StreamSubscription(communityId: UUID(), syncToken: nil) }
                try stream.send(StreamClientFrame(type: .subscribe, communities: many))
                let named = Set(many.map(\.communityId))
                let answered = try await stream.wait(for: "600 refusals") { frames in
                    frames.filter { $0.type == .refused && named.contains($0.communityId ?? UUID()) }.count == 600
                }
                #expect(
                    answered.filter { named.contains($0.communityId ?? UUID()) }
                        .allSatisfy { $0.code == "COMMUNITY_NOT_FOUND" })
                await stream.close()
            }
        }
    }

    /// A subscription whose token is more than ``SyncEngine/mostChanges`` change-log entries
    /// behind gets `reset` (run a full sync) instead of a frame per change (found by a review:
    /// every entry was sent, however many); another community of the same request is served.
    @Test func aTokenTooFarBehindIsResetNotSentChangeByChange() async throws {
        try await CoreHarness.run { api in
            let (_, club, ada) = try await api.clubWithOneMember()
            let quiet = try await api.community(by: ada)
            let (busyToken, quietToken) = (
                try await Self.syncToken(api, club, as: ada), try await Self.syncToken(api, quiet, as: ada)
            )
            // And a token from ahead of the database (made up, or another database's).
            let elsewhere = try await api.community(by: ada)
            let now = try #require(
                PostgresSnapshot(try SyncToken(text: try await Self.syncToken(api, elsewhere, as: ada)).snapshot))
            let ahead = SyncToken(snapshot: "\(now.xmax + 1_000_000):\(now.xmax + 1_000_000):", issuedAt: Date()).text
            try await SyncTests.logChanges(SyncEngine.mostChanges + 1, in: club)
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.send(
                    StreamClientFrame(
                        type: .subscribe,
                        communities: [
                            StreamSubscription(communityId: club.id, syncToken: busyToken),
                            StreamSubscription(communityId: quiet.id, syncToken: quietToken),
                            StreamSubscription(communityId: elsewhere.id, syncToken: ahead),
                        ]))
                let frames = try await stream.wait(for: "three answers") { frames in
                    frames.filter { [.subscribed, .reset].contains($0.type) }.count == 3
                }
                #expect(frames.contains { $0.type == .reset && $0.communityId == elsewhere.id })
                #expect(frames.contains { $0.type == .reset && $0.communityId == club.id })
                #expect(frames.contains { $0.type == .subscribed && $0.communityId == quiet.id })
                #expect(!frames.contains { $0.type == .change && $0.communityId == club.id })
                await stream.close()
            }
        }
    }

    @Test func aRemovedMemberStopsReceivingAtOnce() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada, ben) = try await api.clubWithTwoMembers()
            let adaToken = try await Self.syncToken(api, club, as: ada)
            let benToken = try await Self.syncToken(api, club, as: ben)
            let clubId = club.id
            try await Self.run(api) { ports in
                let adas = StreamProbe.open(port: ports[0], as: ada)
                let bens = StreamProbe.open(port: ports[0], as: ben)
                try adas.subscribe(club.id, from: adaToken)
                try bens.subscribe(club.id, from: benToken)
                try await adas.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                try await bens.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                let removed = try await api.call(.delete, "/api/v1/communities/\(club.id)/members/\(ada.id)", as: coach)
                #expect(removed.status == .noContent)
                try await adas.wait(for: "removed") { $0.contains { $0.type == .removed && $0.communityId == clubId } }
                let after = try await Self.post(api, in: club, by: coach, "After Ada left")
                try await bens.wait(for: "Ben's post") { _ in !bens.changes(of: after).isEmpty }
                try await Task.sleep(for: .seconds(1.5))
                #expect(adas.changes(of: after).isEmpty)

                await adas.close()
                await bens.close()
            }
        }
    }

    @Test func aCommunityJoinedWhileConnectedIsFollowed() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let later = try await api.community(by: coach)
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                try await api.join(ada, later, invitedBy: coach)
                let joined = try await stream.wait(for: "joined") { frames in frames.contains { $0.type == .joined } }
                #expect(joined.contains { $0.type == .joined && $0.communityId == later.id && $0.syncToken != nil })
                let news = try await Self.post(api, in: later, by: coach, "Welcome")
                try await stream.wait(for: "the new community's post") { _ in !stream.changes(of: news).isEmpty }
                await stream.close()
            }
        }
    }

    /// A change to the user's membership of a community the stream does not follow (a role,
    /// their profile) is not a join: only joining sends `joined`.
    @Test func aRoleChangeInACommunityNotFollowedIsNoJoin() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let later = try await api.community(by: coach)
            let (clubId, laterId) = (club.id, later.id)
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                let promoted = try await api.call(
                    .patch, "/api/v1/communities/\(clubId)/members/\(ada.id)", as: coach, json: #"{"role":"admin"}"#)
                #expect(promoted.status == .ok)
                // Committed after the promotion, so its frames come after the promotion's.
                try await api.join(ada, later, invitedBy: coach)
                try await stream.wait(for: "joined") { $0.contains { $0.type == .joined } }
                let news = try await Self.post(api, in: later, by: coach, "Welcome")
                try await stream.wait(for: "the new community's post") { _ in !stream.changes(of: news).isEmpty }
                let joins = stream.frames.filter { $0.type == .joined }.compactMap { $0.communityId }
                #expect(joins == [laterId], "joined \(joins) where only \(laterId) was joined")
                await stream.close()
            }
        }
    }

    /// The change feed cancelled while it leads stops, and its lock goes with it. Cancelled is
    /// how a service group stops its parts when one of them fails (or its task is cancelled):
    /// all at once, the pool with them; the feed released its lock with a statement sent as the
    /// pool shut down, which never returned, so the service never stopped. A key of its own
    /// makes this feed lead at once whatever other tests' feeds do.
    @Test func aFeedCancelledWhileLeadingStopsAndReleasesItsLock() async throws {
        let key = Int64.random(in: 1...Int64(Int32.max - 1))
        let (database, redis) = try Self.databaseAndRedis()
        let feed = StreamChangeFeed(
            database: database, redis: redis,
            settings: try StreamSettings(environment: Environment(["ORBITCOVE_STREAM_POLL_MS": "50"])),
            logger: TestEnvironment.logger, listenersArrived: Doorbell(), lockKey: key)
        let services: [any Service] = [database.service(), redis, feed]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                logger: TestEnvironment.logger))
        let stopped = Mutex(false)
        // A task of its own, so that a feed that never stops fails this test instead of hanging the run.
        let running = Task {
            defer { stopped.withLock { $0 = true } }
            try await group.run()
        }
        #expect(try await eventually { try await Self.lockHolders(key) == 1 }, "the feed never took its lock")
        // The feed alone, cancelled while the pool runs on: its lock goes with it at once.
        let alone = StreamChangeFeed(
            database: database, redis: redis,
            settings: try StreamSettings(environment: Environment(["ORBITCOVE_STREAM_POLL_MS": "50"])),
            logger: TestEnvironment.logger, listenersArrived: Doorbell(), lockKey: key + 1)
        let leading = Task { try await alone.run() }
        #expect(
            try await eventually { try await Self.lockHolders(key + 1) == 1 }, "the second feed never took its lock")
        leading.cancel()
        _ = await leading.result
        #expect(try await eventually { try await Self.lockHolders(key + 1) == 0 }, "the lock outlived its feed")
        #expect(try await Self.lockHolders(key) == 1, "the first feed lost its lock")
        // Then the whole group, pool and all, at once.
        running.cancel()
        let deadline = ContinuousClock.now + .seconds(10)
        while !stopped.withLock({ $0 }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(stopped.withLock { $0 }, "the cancelled feed had not stopped after 10 s")
        #expect(try await eventually { try await Self.lockHolders(key) == 0 }, "the lock outlived the feed")
    }

    /// A small pool and one Redis connection of a test's own, for services it runs itself.
    static func databaseAndRedis() throws -> (Database, RedisClient) {
        let database = try Database(
            url: TestEnvironment.databaseURL, maxConnections: 4, connectionWait: .seconds(15),
            logger: TestEnvironment.logger)
        let redis = try RedisClient(
            url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
            logger: TestEnvironment.logger)
        return (database, redis)
    }

    /// Runs `services` (after a database's and a Redis client's of their own) while `body` runs.
    static func running(
        _ services: @escaping @Sendable (Database, RedisClient) -> [any Service],
        _ body: @Sendable (Database, RedisClient) async throws -> Void
    ) async throws {
        let (database, redis) = try Self.databaseAndRedis()
        let all: [any Service] = [database.service(), redis] + services(database, redis)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: all.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                logger: TestEnvironment.logger))
        let running = Task { try await group.run() }
        let outcome: Result<Void, any Error>
        do {
            try await body(database, redis)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        running.cancel()
        _ = await running.result
        try outcome.get()
    }

    /// Found by the idle benchmark: with no stream open anywhere the reader read the change log
    /// ten times a second, 600 of an idle stack's 660–690 transactions a minute. It now reads it
    /// at its poll only while some instance says in Redis that it has a stream open, and at its
    /// tick otherwise. A feed of its own lock and namespace, so no other test's streams count.
    @Test func aFeedReadsTheLogAtItsTickUnlessSomeoneListens() async throws {
        let key = Int64.random(in: 1...Int64(Int32.max - 1))
        let namespace = "test-\(UUID().lowercasedString)"
        let settings = try StreamSettings(
            environment: Environment(["ORBITCOVE_STREAM_POLL_MS": "50", "ORBITCOVE_STREAM_TICK_SECONDS": "5"]))
        let feed = Mutex<StreamChangeFeed?>(nil)
        let arrived = Doorbell()
        try await Self.running({ database, redis in
            let made = StreamChangeFeed(
                database: database, redis: redis, settings: settings, logger: TestEnvironment.logger,
                listenersArrived: arrived, lockKey: key, namespace: namespace)
            feed.withLock { $0 = made }
            return [made]
        }) { _, redis in
            let reads = try #require(feed.withLock { $0 }).reads
            #expect(try await eventually { try await Self.lockHolders(key) == 1 }, "the feed never took its lock")
            #expect(try await eventually { reads.count > 0 })
            // Nobody listening: at its tick, every 5 s (at its poll it would be 50 times in 2.5 s;
            // under a loaded test run each read takes longer, so the bounds leave room).
            let quiet = reads.count
            try await Task.sleep(for: .milliseconds(2500))
            let idle = reads.count - quiet
            #expect(idle <= 1, "read the log \(idle) times in 2.5 s with nobody listening")
            // An instance says it listens, and announces it (as a hub's subscription hears it):
            // at its poll, from the announcement on.
            // (At its tick it would read at most once in 3 s; at its 50 ms poll, dozens of times on
            // an idle machine, fewer under a whole test run's load.)
            try await redis.set(StreamBatch.listeningKey(in: namespace), "1", expiresIn: 10)
            arrived.ring()
            let heard = reads.count
            try await Task.sleep(for: .seconds(3))
            let busy = reads.count - heard
            #expect(busy >= 4, "read the log \(busy) times in 3 s with someone listening")
        }
    }

    /// A hub says in Redis that this instance listens while it has a stream open, at once when
    /// one opens, and stops saying so (its word expires) when none is left.
    @Test func aHubSaysItListensWhileAStreamIsOpen() async throws {
        let namespace = "test-\(UUID().lowercasedString)"
        let listening = StreamBatch.listeningKey(in: namespace)
        let hub = Mutex<StreamHub?>(nil)
        let arrived = Doorbell()
        try await Self.running({ database, redis in
            let made = StreamHub(
                database: database, redis: redis, maxStreamsPerUser: 2, logger: TestEnvironment.logger,
                listenersArrived: arrived, namespace: namespace)
            hub.withLock { $0 = made }
            return [made]
        }) { _, redis in
            let hub = try #require(hub.withLock { $0 })
            // What every instance's subscription hears: this test's own, beside the hub's.
            let arrivals = StreamBatch.arrivalsChannel(in: namespace)
            let announcements = Mutex(0)
            let listener = Task {
                for await _ in redis.subscribe(to: [arrivals]) { announcements.withLock { $0 += 1 } }
            }
            defer { listener.cancel() }
            #expect(
                try await eventually {
                    guard case .array(let parts) = try await redis.command(["PUBSUB", "NUMSUB", arrivals]) else {
                        return false
                    }
                    return parts.last?.integer == 2
                }, "the hub's and the test's subscriptions never came up")
            #expect(try await redis.get(listening) == nil, "a hub with no stream open says it listens")
            let stream = StreamConnection(userId: UUID(), bound: 8)
            #expect(hub.add(stream))
            #expect(try await eventually(timeout: .seconds(2)) { try await redis.get(listening) != nil })
            // The first stream is announced to every instance and rings this one's reader: once,
            // not with every second's word.
            #expect(try await eventually { announcements.withLock { $0 } == 1 }, "the hub never announced its stream")
            #expect(await arrived.wait(until: .now + .seconds(5)), "the hub's reader was never rung")
            try await Task.sleep(for: .milliseconds(2500))
            #expect(announcements.withLock { $0 } == 1, "announced with every second's word")
            hub.remove(stream)
            #expect(
                try await eventually(timeout: .seconds(Double(StreamBatch.listeningSeconds) + 3)) {
                    try await redis.get(listening) == nil
                }, "the hub still says it listens with no stream open")
        }
    }

    @Test func upgradesNeedATokenOrATicketAndATicketOpensOneStream() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            try await Self.run(api) { ports in
                let http = HTTPClientProbe(port: ports[0])
                // Not an upgrade: 401 without credentials, 426 with them.
                #expect(try await http.get("/api/v1/me/stream").errorCode == "UNAUTHENTICATED")
                #expect(try await http.get("/api/v1/me/stream", token: ada.token).status == 426)
                // An upgrade without a token or ticket, with a bad token, with a made-up ticket: 401.
                for (token, query) in [(nil, ""), ("nope", ""), (nil, "?ticket=\(String(repeating: "A", count: 43))")] {
                    let reply = try await http.get("/api/v1/me/stream\(query)", token: token, upgrade: true)
                    #expect(reply.status == 401, "\(query)")
                }
                let issued = try await http.post("/api/v1/me/stream-tickets", token: ada.token)
                #expect(issued.status == 201)
                let ticket = try JSONCoding.decoder.decode(DataOnly<StreamTicket>.self, from: issued.body).data
                #expect(ticket.expiresAt > Date() && ticket.expiresAt < Date().addingTimeInterval(31))
                #expect(try await http.post("/api/v1/me/stream-tickets", token: nil).status == 401)

                let stream = StreamProbe.open(port: ports[0], ticket: ticket.ticket)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                // Used once: the same ticket is refused before any upgrade.
                let reused = try await http.get("/api/v1/me/stream?ticket=\(ticket.ticket)", upgrade: true)
                #expect(reused.status == 401 && reused.errorCode == "TICKET_INVALID")
                // A ticket given twice is ambiguous, as any query parameter is (the upgrade is
                // answered outside the router, which refuses them elsewhere).
                let twice = try await http.get("/api/v1/me/stream?ticket=a&ticket=b", upgrade: true)
                #expect(twice.status == 400 && twice.errorCode == "VALIDATION_FAILED")
                await stream.close()
            }
        }
    }

    /// An access token outlives its account by up to its 15 minutes. It got stream tickets, and
    /// a stream it opened failed on its first read of the log with `1011`, which asks a client
    /// to reconnect: it reconnected into the same failure until the token expired. Now a ticket
    /// and an upgrade are refused as every other request is, `401 ACCOUNT_DELETED`, and a stream
    /// whose account is erased while it is open is closed with `4004`.
    @Test func aTokenThatOutlivedItsAccountOpensNoStream() async throws {
        try await CoreHarness.run { api in
            let (_, club, ada) = try await api.clubWithOneMember()
            let token = try await Self.syncToken(api, club, as: ada)
            try await Self.run(api) { ports in
                let http = HTTPClientProbe(port: ports[0])
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                let issued = try await http.post("/api/v1/me/stream-tickets", token: ada.token)
                let ticket = try JSONCoding.decoder.decode(DataOnly<StreamTicket>.self, from: issued.body).data
                try await withTestDatabase { database in
                    _ = try await database.systemQuery("UPDATE users SET deleted_at = NOW() WHERE id = \(ada.id)")
                }
                for reply in [
                    try await http.post("/api/v1/me/stream-tickets", token: ada.token),
                    try await http.get("/api/v1/me/stream", token: ada.token, upgrade: true),
                    try await http.get("/api/v1/me/stream?ticket=\(ticket.ticket)", upgrade: true),
                ] {
                    #expect(reply.status == 401 && reply.errorCode == "ACCOUNT_DELETED")
                }
                // The open stream reads the log for a subscription, and is closed for good.
                try stream.subscribe(club.id, from: token)
                let closed = try await stream.end()
                #expect(closed.map { UInt16(webSocketErrorCode: $0.closeCode) } == 4004)
            }
        }
    }

    @Test func framesThatAreNotStreamFramesCloseTheStreamWithACode() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let long = String(repeating: "é", count: 100)
            try await Self.run(api) { ports in
                let cases: [(WebSocketOutboundWriter.OutboundFrame, UInt16)] = [
                    (.text("not json"), 1008),
                    (.text(#"{"type":"subscribe","type":"unsubscribe"}"#), 1008),
                    // A reason naming a long key still fits a close frame (125 bytes).
                    (.text(#"{"type":"subscribe","\#(long)":1,"\#(long)":2}"#), 1008),
                    (.text(#"{"type":"launch"}"#), 1008),
                    // Not JSON, though Foundation's decoder reads it as if the comma were not there.
                    (.text(#"{"type":"unsubscribe","communityIds":[],}"#), 1008),
                    (.binary(ByteBuffer(string: "{}")), 1003),
                    (.text(String(repeating: " ", count: 70 * 1024)), 1009),
                    // A text frame that is not UTF-8 (a hostile probe's: it was 1011, "reconnect").
                    (.custom(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: [0xFF, 0xFE]))), 1007),
                ]
                for (frame, code) in cases {
                    let stream = StreamProbe.open(port: ports[0], as: ada)
                    try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                    stream.send(raw: frame)
                    let closed = try await stream.end()
                    #expect(closed.map { UInt16(webSocketErrorCode: $0.closeCode) } == code, "\(frame)")
                }
                // A flood of well-formed frames (each subscribe reads the change log) is closed.
                let flooding = StreamProbe.open(port: ports[0], as: ada)
                try await flooding.wait(for: "the unread count") { $0.first?.type == .unread }
                for _ in 0..<200 { try flooding.send(StreamClientFrame(type: .unsubscribe, communityIds: [UUID()])) }
                let flooded = try await flooding.end()
                #expect(flooded.map { UInt16(webSocketErrorCode: $0.closeCode) } == 1008)
                #expect(flooded?.reason?.contains("Too many frames") == true)
                // The service is unharmed: a new stream is served.
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                await stream.close()
            }
        }
    }

    /// A client cut off in the middle of a batch resumes from the last frame it got and misses
    /// none of the rest, nor gets any again: each change carries the token after it. A hostile
    /// probe's: every frame of a batch carried the batch's end, and a client resuming from the
    /// first of eight posts lost the other seven.
    @Test func aStreamCutOffInTheMiddleOfABatchMissesNothing() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let token = try await Self.syncToken(api, club, as: ada)
            // A slow poll, so the posts come in one batch.
            try await Self.run(api, settings: ["ORBITCOVE_STREAM_POLL_MS": "1500"]) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.subscribe(club.id, from: token)
                try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                var posts: [UUID] = []
                for index in 0..<6 { posts.append(try await Self.post(api, in: club, by: coach, "Post \(index)")) }
                try await stream.wait(for: "the posts") { _ in posts.allSatisfy { !stream.changes(of: $0).isEmpty } }
                let tokens = posts.compactMap { stream.changes(of: $0).first?.syncToken ?? nil }
                #expect(Set(tokens).count == posts.count)
                let first = try #require(tokens.first)
                await stream.close()
                // Resumed from the first post's token: the five after it, once each, and not it.
                let resumed = StreamProbe.open(port: ports[0], as: ada)
                try resumed.subscribe(club.id, from: first)
                try await resumed.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                #expect(resumed.changes(of: posts[0]).isEmpty)
                #expect(posts.dropFirst().map { resumed.changes(of: $0).count } == [1, 1, 1, 1, 1])
                await resumed.close()
                // Sync reads the same from that token.
                let synced = try await api.call(
                    .get, "/api/v1/communities/\(club.id)/sync?since=\(first)", as: ada)
                #expect(synced.status == .ok)
                let body = String(decoding: synced.body, as: UTF8.self)
                #expect(!body.contains(posts[0].lowercasedString))
                #expect(posts.dropFirst().allSatisfy { body.contains($0.lowercasedString) })
            }
        }
    }

    /// One commit that logs a row several times (an expense made or edited: its row, then the
    /// totals its splits write back to it) arrives as one change, as sync lists it once: a
    /// hostile probe saw an edit arrive three times, identical, and a new expense as an insert
    /// and an update.
    @Test func aRowLoggedSeveralTimesInOneCommitArrivesOnce() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let edited = try await FinanceTests.expense(
                api, in: club, by: coach, FinanceTests.equal(1000, paidBy: coach, among: [coach, ada]))
            let token = try await Self.syncToken(api, club, as: ada)
            try await Self.run(api) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try stream.subscribe(club.id, from: token)
                try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                let edit = try await api.call(
                    .patch, FinanceTests.path(club, "transactions/\(edited.id)"), as: coach,
                    json: #"{"totalAmount":1200}"#)
                #expect(edit.status == .ok)
                let made = try await FinanceTests.expense(
                    api, in: club, by: coach, FinanceTests.equal(500, paidBy: ada, among: [coach, ada]))
                // A change after both, as a fence: frames come in commit order.
                let post = try await Self.post(api, in: club, by: coach, "after")
                try await stream.wait(for: "the post") { _ in !stream.changes(of: post).isEmpty }
                #expect(stream.changes(of: edited.id).map(\.operation) == ["update"])
                #expect(stream.changes(of: made.id).map(\.operation) == ["insert"])
                await stream.close()
                // The same from the log, for a stream that resumes from before them.
                let resumed = StreamProbe.open(port: ports[0], as: ada)
                try resumed.subscribe(club.id, from: token)
                try await resumed.wait(for: "the post") { _ in !resumed.changes(of: post).isEmpty }
                #expect(resumed.changes(of: edited.id).map(\.operation) == ["update"])
                #expect(resumed.changes(of: made.id).map(\.operation) == ["insert"])
                await resumed.close()
            }
        }
    }

    /// The stream's port closes idle HTTP connections as every service's does (a connection
    /// that never finishes its first request head, or stays idle after an answer), and leaves
    /// an open stream alone: it has its heartbeat.
    @Test func idleConnectionsAreClosedAndStreamsAreNot() async throws {
        try await CoreHarness.run { api in
            let (_, club, ada) = try await api.clubWithOneMember()
            let token = try await Self.syncToken(api, club, as: ada)
            try await Self.run(api, settings: ["ORBITCOVE_HTTP_IDLE_SECONDS": "1"]) { ports in
                let stream = StreamProbe.open(port: ports[0], as: ada)
                try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                let http = HTTPClientProbe(port: ports[0])
                for (name, bytes) in [
                    ("nothing", ""), ("half a head", "GET /health HTTP/1.1\r\nHost: x\r\n"),
                    ("an answered request", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"),
                ] {
                    let (_, closed) = try await http.exchange(raw: Array(bytes.utf8))
                    #expect(closed, "\(name): the connection stayed open")
                }
                // Well past the idle time, the stream still answers.
                try stream.subscribe(club.id, from: token)
                try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                await stream.close()
            }
        }
    }

    /// A request that asks to upgrade to something other than a WebSocket (`h2c`, anything) is
    /// answered as if it had not asked, as RFC 9110 lets a server: NIO's upgrader dropped such
    /// a request without a word (a hostile probe's: an empty reply, the gateway's `502`).
    @Test func anUpgradeToAnotherProtocolIsIgnored() async throws {
        try await CoreHarness.run { api in
            try await Self.run(api) { ports in
                let http = HTTPClientProbe(port: ports[0])
                for (path, upgrade, status) in [
                    ("/health", "foo", 200), ("/health", "h2c", 200), ("/api/v1/me/stream", "h2c", 401),
                ] {
                    let (reply, _) = try await http.exchange(
                        raw: Array(
                            "GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: \(upgrade)\r\nConnection: Upgrade\r\n\r\n".utf8
                        ))
                    let text = String(decoding: reply, as: UTF8.self)
                    #expect(text.hasPrefix("HTTP/1.1 \(status)"), "\(path) \(upgrade): \(text.prefix(200))")
                }
            }
        }
    }

    /// A service stopping closes a connection that has not sent its first request at once, as
    /// Hummingbird closes idle HTTP ones: waiting out the idle time (75 s) held a shutdown past
    /// Kubernetes' grace period (a review's).
    @Test func aSilentConnectionDoesNotHoldUpAShutdown() async throws {
        try await CoreHarness.run { api in
            let watching = Mutex<Task<Bool, any Error>?>(nil)
            try await Self.run(api) { ports in
                // Connected before the service stops, and watched from then on (five seconds).
                let socket = try await HTTPClientProbe(port: ports[0]).silent()
                watching.withLock { $0 = Task { try await HTTPClientProbe.closes(socket) } }
            }
            let watch = try #require(watching.withLock { $0 })
            #expect(try await watch.value, "the connection was still open five seconds into the shutdown")
        }
    }

    /// A handshake the stream cannot take is answered in the envelope, as RFC 6455 §4.2.2 asks:
    /// `426` naming version 13 for another version (or none, or two), `400` for a key that is
    /// not one 16-byte nonce. A hostile probe got the connection dropped (the gateway's `502`):
    /// NIO's upgrader refuses such a handshake before the service sees it.
    @Test func aHandshakeTheStreamCannotTakeIsAnsweredInTheEnvelope() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            try await Self.run(api) { ports in
                let key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                for (headers, status, code) in [
                    ("Sec-WebSocket-Version: 8\r\n" + key, 426, "UPGRADE_REQUIRED"),
                    (key, 426, "UPGRADE_REQUIRED"),
                    ("Sec-WebSocket-Version: thirteen\r\n" + key, 426, "UPGRADE_REQUIRED"),
                    ("Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n" + key, 426, "UPGRADE_REQUIRED"),
                    ("Sec-WebSocket-Version: 13, 8\r\n" + key, 426, "UPGRADE_REQUIRED"),
                    ("Sec-WebSocket-Version: 13\r\n", 400, "BAD_REQUEST"),
                    ("Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short\r\n", 400, "BAD_REQUEST"),
                    ("Sec-WebSocket-Version: 13\r\n" + key + key, 400, "BAD_REQUEST"),
                    // A handshake with a body: NIO's upgrader failed it and dropped the connection
                    // (the gateway's 502; hostile probe 14).
                    ("Sec-WebSocket-Version: 13\r\n" + key + "Content-Length: 5\r\n\r\nhello", 400, "BAD_REQUEST"),
                    (
                        "Sec-WebSocket-Version: 13\r\n" + key + "Transfer-Encoding: chunked\r\n\r\n0\r\n", 400,
                        "BAD_REQUEST"
                    ),
                    ("Sec-WebSocket-Version: 13\r\n" + key + "Content-Length: 0\r\n", 101, nil),
                    ("Sec-WebSocket-Version: 13\r\n" + key, 101, nil),
                ] {
                    var upgrade = "GET /api/v1/me/stream HTTP/1.1\r\nHost: 127.0.0.1:\(ports[0])\r\n"
                    upgrade += "X-Real-IP: \(TestEnvironment.uniqueClientAddress())\r\n"
                    upgrade += "Authorization: Bearer \(ada.token)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    upgrade += headers + "\r\n"
                    let (reply, _) = try await HTTPClientProbe(port: ports[0]).exchange(raw: Array(upgrade.utf8))
                    let text = String(decoding: reply, as: UTF8.self)
                    #expect(text.hasPrefix("HTTP/1.1 \(status) "), "\(headers): \(text.prefix(200))")
                    if let code {
                        #expect(text.contains(#""code":"\#(code)""#), "\(headers): \(text.prefix(400))")
                        #expect(text.lowercased().contains("content-type: application/json"), "\(headers)")
                    }
                    if status == 426 {
                        #expect(text.lowercased().contains("sec-websocket-version: 13\r\n"), "\(text.prefix(400))")
                    }
                }
                // An upgrade whose body breaks off (a broken chunk) is refused and closes too.
                var chunked = "GET /api/v1/me/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(ada.token)\r\n"
                chunked += "X-Real-IP: \(TestEnvironment.uniqueClientAddress())\r\n"
                chunked += "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key
                chunked += "Transfer-Encoding: chunked\r\n\r\nzz\r\n"
                let (_, closedAfterChunk) = try await HTTPClientProbe(port: ports[0]).exchange(raw: Array(chunked.utf8))
                #expect(closedAfterChunk, "a broken chunk left the upgrade's connection open")
                // Bytes that are not a request: the envelope's 400 too, not NIO's empty one.
                let garbage = "GET /api/v1/me/stream HTTP/1.1\r\nHost: x\r\nX-Foo: a\u{1}b\r\n\r\n"
                let (reply, closed) = try await HTTPClientProbe(port: ports[0]).exchange(raw: Array(garbage.utf8))
                let text = String(decoding: reply, as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 400") && text.contains(#""code":"BAD_REQUEST""#), "\(text)")
                #expect(closed)
            }
        }
    }

    /// RFC 6455 §5.1: a server closes the connection on a client frame that is not masked,
    /// with `1002` (a hostile probe's: such a frame was served).
    @Test func anUnmaskedClientFrameClosesTheStreamWith1002() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            try await Self.run(api) { ports in
                var upgrade = "GET /api/v1/me/stream HTTP/1.1\r\nHost: 127.0.0.1:\(ports[0])\r\n"
                upgrade += "X-Real-IP: \(TestEnvironment.uniqueClientAddress())\r\n"
                upgrade += "Authorization: Bearer \(ada.token)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                upgrade += "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                // A well-formed frame, sent as a server would send it: no mask.
                let payload = Array(#"{"type":"unsubscribe","communityIds":[]}"#.utf8)
                let frame: [UInt8] = [0x81, UInt8(payload.count)] + payload
                let (reply, closed) = try await HTTPClientProbe(port: ports[0]).exchange(
                    raw: Array(upgrade.utf8) + frame)
                #expect(String(decoding: reply.prefix(12), as: UTF8.self) == "HTTP/1.1 101")
                #expect(reply.firstRange(of: Data([0x88, 0x02, 0x03, 0xEA])) != nil, "no close frame with 1002")
                #expect(closed)
            }
        }
    }

    /// A burst, then a steady pace: what a client may send without being closed.
    @Test func clientFramesAreAllowedABurstThenTenASecond() {
        typealias Allowance = StreamFrameAllowance
        /// How many of the frames sent at `instants` are allowed.
        func allowed(_ allowance: inout Allowance, _ instants: [ContinuousClock.Instant]) -> Int {
            instants.reduce(0) { count, instant in count + (allowance.take(at: instant) ? 1 : 0) }
        }
        var allowance = Allowance()
        let start = ContinuousClock.now
        #expect(allowed(&allowance, Array(repeating: start, count: Allowance.burst + 5)) == Allowance.burst)
        // A tenth of a second earns one frame, and no more.
        let tenth = start + .milliseconds(100)
        #expect(allowed(&allowance, [tenth, tenth]) == 1)
        // A quiet minute refills the burst, not more.
        let later = start + .seconds(60)
        #expect(allowed(&allowance, Array(repeating: later, count: Allowance.burst + 5)) == Allowance.burst)
        // A steady ten a second is never refused.
        var steady = Allowance()
        #expect(allowed(&steady, (0..<300).map { later + .milliseconds(100 * $0) }) == 300)
        // A frame naming many communities costs more: the largest fits a fresh burst, once.
        var large = Allowance()
        let largest = Allowance.cost(naming: 500, following: 500)
        let taken = [start, start + .seconds(1), start + .seconds(3)].map { large.take(largest, at: $0) }
        #expect(taken == [true, false, true])
        // Past what a stream follows, names are refused without reading the log: no dearer.
        #expect(
            Allowance.cost(naming: 600, following: 500) == largest
                && Allowance.cost(naming: 499, following: 500) < largest)
    }

    @Test func aStreamClosesWhenItsTokenExpiresAndStreamsPerUserAreBounded() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            try await Self.run(api, settings: ["ORBITCOVE_STREAM_MAX_PER_USER": "2"]) { ports in
                let redis = try RedisClient(
                    url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
                    logger: TestEnvironment.logger)
                try await withServices([redis]) {
                    let ticket = try await StreamTickets(redis: redis).issue(
                        for: ada.id, until: Date().addingTimeInterval(2))
                    let expiring = StreamProbe.open(port: ports[0], ticket: ticket.ticket)
                    let closed = try await expiring.end()
                    #expect(
                        closed.map { UInt16(webSocketErrorCode: $0.closeCode) } == StreamCloseCode.tokenExpired.rawValue
                    )
                }
                let streams = (0..<2).map { _ in StreamProbe.open(port: ports[0], as: ada) }
                for stream in streams { try await stream.wait(for: "the unread count") { $0.first?.type == .unread } }
                // Read as bytes: the refusal is the frame right after the `101`, and the WebSocket
                // client library lost a frame that came in the same read as the upgrade's answer
                // now and then (the service had sent it, and closed the socket 5 s later).
                let third = try await HTTPClientProbe(port: ports[0]).get(
                    "/api/v1/me/stream", token: ada.token, upgrade: true)
                #expect(third.status == 101)
                let close = Array(third.body.prefix(4))
                #expect(close.count == 4 && close[0] == 0x88, "not a close frame: \(close)")
                #expect(
                    close.count == 4
                        && UInt16(close[2]) << 8 | UInt16(close[3]) == StreamCloseCode.tooManyStreams.rawValue)
                for stream in streams { await stream.close() }
            }
        }
    }

    /// The service's routes spend each user's budgets (here two writes a minute): a third
    /// ticket is refused with `429`, another user's is not.
    @Test func streamTicketsSpendAPerUserBudget() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            try await Self.run(api, settings: ["ORBITCOVE_NOTIFICATIONS_WRITES_PER_MINUTE": "2"]) { ports in
                let http = HTTPClientProbe(port: ports[0])
                var statuses: [Int] = []
                for _ in 0..<3 {
                    statuses.append(try await http.post("/api/v1/me/stream-tickets", token: ada.token).status)
                }
                #expect(statuses == [201, 201, 429])
                let refused = try await http.post("/api/v1/me/stream-tickets", token: ada.token)
                #expect(refused.errorCode == "RATE_LIMITED")
                #expect(try await http.post("/api/v1/me/stream-tickets", token: ben.token).status == 201)
            }
        }
    }

    /// Bytes that are not HTTP, and an upgrade that is not one, on the service's own port:
    /// answered and closed at once, so a stranger cannot hold sockets open with garbage.
    @Test func malformedRequestsAreAnsweredAndClosed() async throws {
        try await CoreHarness.run { api in
            try await Self.run(api) { ports in
                for garbage in [
                    "NOT HTTP AT ALL\r\n\r\n",
                    "GET /api/v1/me/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nContent-Length: -1\r\n\r\n",
                    "GET /api/v1/me/stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nzz\r\n",
                ] {
                    let (reply, closed) = try await HTTPClientProbe(port: ports[0]).exchange(raw: Array(garbage.utf8))
                    let head = String(decoding: reply.prefix(12), as: UTF8.self)
                    #expect(head == "HTTP/1.1 400", "\(garbage.debugDescription) was answered \(head.debugDescription)")
                    #expect(closed, "the service kept the socket of \(garbage.debugDescription) open")
                }
            }
        }
    }

    /// Closes every instance's subscription connection (`CLIENT KILL ID`): what Redis publishes
    /// until they subscribe again is lost to them.
    @discardableResult
    static func killStreamSubscriptions(_ redis: RedisClient) async throws -> Int {
        let list = try await redis.command(["CLIENT", "LIST", "TYPE", "pubsub"]).string ?? ""
        var killed = 0
        for line in list.split(separator: "\n") where line.contains("name=orbitcove-stream ") {
            guard let id = line.split(separator: " ").first(where: { $0.hasPrefix("id=") })?.dropFirst(3) else {
                continue
            }
            killed += try await redis.command(["CLIENT", "KILL", "ID", String(id)]).integer ?? 0
        }
        return killed
    }
}

/// The tests that cut every instance's Redis subscription, one after the other: each counts
/// what it cut, which the other's cutting would take from it.
extension StreamTests {
    @Suite(.serialized) struct SubscriptionsCut {
        /// The count's hint travels in a Redis publication; one lost (the instance's subscription
        /// cut while the notification was written) is made good when the next publication shows
        /// the gap, not only by the next notification.
        @Test func anUnreadCountWhosePublicationWasLostStillArrives() async throws {
            try await CoreHarness.run { api in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let redis = try RedisClient(
                    url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
                    logger: TestEnvironment.logger)
                try await withServices([redis]) {
                    try await StreamTests.run(api) { ports in
                        let stream = StreamProbe.open(port: ports[0], as: ada)
                        try await stream.wait(for: "the unread count") { $0.first?.type == .unread }
                        // Every stream subscription is cut again and again (each comes back after
                        // 100 to 200 ms): what is published meanwhile is lost to it.
                        let cutting = Task {
                            while !Task.isCancelled {
                                _ = try? await StreamTests.killStreamSubscriptions(redis)
                                try? await Task.sleep(for: .milliseconds(5))
                            }
                        }
                        _ = try await api.createEvent(
                            in: club, by: coach, #"{"title":"Practice","startsAt":"2031-05-01T17:00:00Z"}"#)
                        // Ada's notification written, then a tick for the feed to publish its hint.
                        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                            for _ in 0..<300 {
                                let written = try await count(
                                    "SELECT count(*)::int FROM notifications WHERE user_id = \(ada.id)", in: owner)
                                if written > 0 { break }
                                try await Task.sleep(for: .milliseconds(50))
                            }
                        }
                        try await Task.sleep(for: .seconds(2))
                        cutting.cancel()
                        await cutting.value
                        try await stream.wait(for: "a count of one") { frames in
                            frames.contains { $0.type == .unread && $0.count == 1 }
                        }
                        await stream.close()
                    }
                }
            }
        }

        /// Two instances, clients on both, a writer, and Redis's pub/sub connections killed
        /// mid-run: every client still gets every change exactly once.
        @Test func twoInstancesLosingRedisPubSubMidRunMissNothingAndRepeatNothing() async throws {
            try await CoreHarness.run { api in
                let (coach, club, ada, ben) = try await api.clubWithTwoMembers()
                let tokens = [
                    try await StreamTests.syncToken(api, club, as: ada),
                    try await StreamTests.syncToken(api, club, as: ben),
                ]
                try await StreamTests.run(api, instances: 2) { ports in
                    let streams = [
                        StreamProbe.open(port: ports[0], as: ada), StreamProbe.open(port: ports[1], as: ben),
                        StreamProbe.open(port: ports[1], as: ada),
                    ]
                    // Closed on every path: a stream left open would hold up its instance's
                    // shutdown until the server ends it.
                    let posts: [UUID]
                    do {
                        for (index, stream) in streams.enumerated() {
                            try stream.subscribe(club.id, from: tokens[index == 1 ? 1 : 0])
                            try await stream.wait(for: "subscribed") { $0.contains { $0.type == .subscribed } }
                        }
                        let redis = try RedisClient(
                            url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
                            logger: TestEnvironment.logger)
                        posts = try await withServices([redis]) {
                            var posts: [UUID] = []
                            for round in 0..<30 {
                                posts.append(try await StreamTests.post(api, in: club, by: coach, "Post \(round)"))
                                if round == 10 || round == 20 {
                                    #expect(try await StreamTests.killStreamSubscriptions(redis) >= 2)
                                }
                                try await Task.sleep(for: .milliseconds(50))
                            }
                            return posts
                        }
                        for (index, stream) in streams.enumerated() {
                            let missing = { posts.indices.filter { stream.changes(of: posts[$0]).isEmpty } }
                            _ = try? await stream.wait(seconds: 20, for: "all 30 posts on stream \(index)") { _ in
                                missing().isEmpty
                            }
                            #expect(missing().isEmpty, "stream \(index) missed posts \(missing())")
                        }
                        try await Task.sleep(for: .seconds(2))
                    } catch {
                        for stream in streams { await stream.close(within: 5) }
                        throw error
                    }
                    for stream in streams {
                        #expect(posts.allSatisfy { stream.changes(of: $0).count == 1 })
                        await stream.close()
                    }
                }
            }
        }
    }
}

/// Plain HTTP/1.1 requests to a live service, with or without WebSocket upgrade headers.
/// The sockets block, so they are read on NIO's thread pool: on Swift's cooperative pool (two
/// threads on two cores) two waiting reads left the services in this process no thread to
/// answer them on.
struct HTTPClientProbe {
    let port: Int

    struct Reply {
        var status: Int
        var body: Data
        var errorCode: String? {
            let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
            return (json?["error"] as? [String: Any])?["code"] as? String
        }
    }

    func get(_ path: String, token: String? = nil, upgrade: Bool = false) async throws -> Reply {
        try await send("GET", path, token: token, upgrade: upgrade)
    }

    func post(_ path: String, token: String?) async throws -> Reply {
        try await send("POST", path, token: token, upgrade: false)
    }

    /// One request on a connection of its own, written and read as bytes (an HTTP client
    /// library would refuse, or wait on, a request that asks for an upgrade).
    private func send(_ method: String, _ path: String, token: String?, upgrade: Bool) async throws -> Reply {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        head += "X-Real-IP: \(TestEnvironment.uniqueClientAddress())\r\nContent-Length: 0\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if upgrade {
            head = head.replacingOccurrences(of: "Connection: close", with: "Connection: Upgrade")
            head += "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        }
        let request = Array((head + "\r\n").utf8)
        let port = self.port
        let response = try await NIOThreadPool.singleton.runIfActive { try Self.exchange(request, port: port) }
        guard let split = response.firstRange(of: Data("\r\n\r\n".utf8)),
            let statusLine = String(data: response[..<split.lowerBound], encoding: .utf8)?.split(separator: "\r\n")
                .first,
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else { throw TestFailure("not an HTTP response: \(String(decoding: response, as: UTF8.self))") }
        return Reply(status: status, body: Data(response[split.upperBound...]))
    }

    /// Writes `bytes` as they are; what came back, and whether the server closed the socket
    /// within five seconds.
    func exchange(raw bytes: [UInt8]) async throws -> (reply: Data, closed: Bool) {
        let port = self.port
        return try await NIOThreadPool.singleton.runIfActive {
            var closed = false
            let reply = try Self.exchange(bytes, port: port, closed: &closed)
            return (reply, closed)
        }
    }

    private static func exchange(_ request: [UInt8], port: Int) throws -> Data {
        var closed = false
        return try exchange(request, port: port, closed: &closed)
    }

    /// A connection opened and left silent: connected when this returns. ``closes(_:)`` says
    /// what became of it.
    func silent() async throws -> Int32 {
        let port = self.port
        return try await NIOThreadPool.singleton.runIfActive { try Self.connected(port: port) }
    }

    /// Whether the server closed `socket` within five seconds (it is closed either way).
    static func closes(_ socket: Int32) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive {
            defer { close(socket) }
            var closed = false
            _ = read(socket, into: Data(), closed: &closed)
            return closed
        }
    }

    private static func connected(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("socket: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw TestFailure("connect: \(errno)")
        }
        return socket
    }

    /// Reads `socket` until the server closes it or five seconds pass without a byte.
    private static func read(_ socket: Int32, into response: Data, closed: inout Bool) -> Data {
        var response = response
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(socket, &buffer, buffer.count)
            if count == 0 || (count < 0 && errno == ECONNRESET) { closed = true }
            if count <= 0 { break }
            response.append(contentsOf: buffer[..<count])
        }
        return response
    }

    /// Writes `request` and reads until the server closes (at most five seconds).
    private static func exchange(_ request: [UInt8], port: Int, closed: inout Bool) throws -> Data {
        let socket = try connected(port: port)
        defer { close(socket) }
        guard write(socket, request, request.count) == request.count else { throw TestFailure("write: \(errno)") }
        return read(socket, into: Data(), closed: &closed)
    }
}
