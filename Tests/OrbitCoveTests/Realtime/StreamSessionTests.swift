import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

@testable import NotificationsService

/// A stream's parts without sockets, fed batches by hand: what Redis loses (a publication
/// that never arrives) is found from the log.
@Suite struct StreamSessionTests {
    /// A batch of `shard` from `previous` to `next`, with no changes.
    static func batch(_ shard: Int, from previous: String?, to next: String) throws -> String {
        let batch = StreamBatch(shard: shard, previous: previous, next: next, readAt: 0, changes: [], communities: nil)
        return String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)
    }

    static func snapshot(_ database: Database) async throws -> String {
        try await database.systemQuery("SELECT pg_current_snapshot()::text").first?.decode(String.self) ?? ""
    }

    /// What the hub has queued for `connection`, in order (ends the connection's queue).
    static func queued(_ connection: StreamConnection) async -> [(batch: StreamBatch, afterGap: Bool)] {
        connection.finish()
        var found: [(batch: StreamBatch, afterGap: Bool)] = []
        for await event in connection.events {
            if case .batch(let batch, let afterGap) = event { found.append((batch, afterGap)) }
        }
        return found
    }

    /// A started session of `user`'s, registered with a hub of its own.
    static func session(of user: UUID, on database: Database, maxSubscriptions: Int) async throws -> StreamSession {
        let hub = try Self.hub(database)
        let connection = StreamConnection(userId: user, bound: 10)
        #expect(hub.add(connection))
        var session = StreamSession(
            connection: connection, hub: hub, log: StreamLog(database: database, logger: TestEnvironment.logger),
            maxSubscriptions: maxSubscriptions, unreadChanged: {})
        try await session.start()
        return session
    }

    /// A batch of `shard` from and to the database's snapshot now, with no changes.
    static func batchNow(_ shard: Int, on database: Database) async throws -> StreamBatch {
        let now = try await snapshot(database)
        return try JSONDecoder().decode(StreamBatch.self, from: Data(try batch(shard, from: now, to: now).utf8))
    }

    static func hub(_ database: Database) throws -> StreamHub {
        let redis = try RedisClient(
            url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
            logger: TestEnvironment.logger)
        return StreamHub(
            database: database, redis: redis, maxStreamsPerUser: 5, logger: TestEnvironment.logger,
            listenersArrived: Doorbell())
    }

    /// A batch that does not follow the last one of its shard (or the first this hub hears, or a
    /// new reader's first) goes to every stream, marked: any of them may have missed a join in
    /// what was lost.
    /// One entry per row per commit, where it first came, saying what the commit left.
    @Test func aCommitsEntriesForOneRowAreOne() {
        let (community, row, other) = (UUID(), UUID(), UUID())
        func change(_ operation: String, _ id: UUID = row, txid: UInt64 = 7) -> StreamBatch.Change {
            .init(community: community, kind: "transaction", id: id, operation: operation, txid: txid)
        }
        for (operations, left) in [
            (["insert", "update"], "insert"), (["update", "update", "update"], "update"),
            (["insert", "delete"], "delete"), (["update", "delete"], "delete"), (["delete", "insert"], "insert"),
            (["insert", "update", "delete", "insert"], "insert"),
        ] {
            let collapsed = StreamBatch.Change.oncePerCommit(operations.map { change($0) })
            #expect(collapsed == [change(left)], "\(operations)")
        }
        // Other rows and other commits stay apart, in log order.
        let log = [change("insert"), change("update", other), change("update"), change("update", txid: 8)]
        #expect(
            StreamBatch.Change.oncePerCommit(log) == [
                change("insert"), change("update", other), change("update", txid: 8),
            ])
    }

    @Test func theHubHandsEveryStreamTheBatchAfterAGap() async throws {
        try await withTestDatabase { database in
            let hub = try Self.hub(database)
            let (follower, other) = (
                StreamConnection(userId: UUID(), bound: 10), StreamConnection(userId: UUID(), bound: 10)
            )
            #expect(hub.add(follower) && hub.add(other))
            let community = UUID()
            hub.follow(community, by: follower)
            let shard = StreamBatch.shard(of: community)
            hub.dispatch(try Self.batch(shard, from: "1:1:", to: "2:2:"))  // the first this hub hears
            hub.dispatch(try Self.batch(shard, from: "2:2:", to: "3:3:"))  // follows it
            hub.dispatch(try Self.batch(shard, from: "4:4:", to: "5:5:"))  // 3:3: to 4:4: was lost
            hub.dispatch(try Self.batch(shard, from: nil, to: "6:6:"))  // a new reader
            let followed = await Self.queued(follower)
            #expect(followed.map(\.batch.next) == ["2:2:", "3:3:", "5:5:", "6:6:"])
            #expect(followed.map(\.afterGap) == [true, false, true, true])
            let others = await Self.queued(other)
            #expect(others.map(\.batch.next) == ["2:2:", "5:5:", "6:6:"])
            #expect(others.map(\.afterGap) == [true, true, true])
        }
    }

    /// A join whose publication never arrived is found by the next batch after the gap, and
    /// announced once; without a gap, a batch that does not name the join reads nothing.
    @Test func aJoinWhosePublicationWasLostIsAnnouncedAfterTheGap() async throws {
        try await CoreHarness.run { api in
            let (coach, _, ada) = try await api.clubWithOneMember()
            let later = try await api.community(by: coach)
            try await withTestDatabase { database in
                var session = try await Self.session(of: ada.id, on: database, maxSubscriptions: 10)
                // Ada joins; the batch that carried it is never handed to the session.
                try await api.join(ada, later, invitedBy: coach)
                let batch = try await Self.batchNow(0, on: database)
                var frames: [StreamFrame] = []
                try await session.handle(.batch(batch, afterGap: false)) { frames.append($0) }
                #expect(frames.isEmpty)
                try await session.handle(.batch(batch, afterGap: true)) { frames.append($0) }
                #expect(frames.map(\.type) == [.joined])
                #expect(frames.first?.communityId == later.id && frames.first?.syncToken != nil)
                // Unfollowed, then another gap: the join is known, so a read finds nothing new.
                try await session.handle(.client(StreamClientFrame(type: .unsubscribe, communityIds: [later.id]))) {
                    _ in
                }
                let again = try await Self.batchNow(1, on: database)
                try await session.handle(.batch(again, afterGap: true)) { frames.append($0) }
                #expect(frames.count == 1, "announced again: \(frames.map(\.summary))")
            }
        }
    }

    /// A join the stream has no room for is not announced, and not forgotten: once the client
    /// unfollows a community, it is announced, once.
    @Test func aJoinWithoutRoomIsAnnouncedOnceThereIsRoom() async throws {
        try await CoreHarness.run { api in
            let (coach, club, ada) = try await api.clubWithOneMember()
            let later = try await api.community(by: coach)
            let token = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: ada)
                .data(CommunitySync.self).syncToken
            try await withTestDatabase { database in
                var session = try await Self.session(of: ada.id, on: database, maxSubscriptions: 1)
                var frames: [StreamFrame] = []
                let subscribe = StreamClientFrame(
                    type: .subscribe, communities: [StreamSubscription(communityId: club.id, syncToken: token)])
                try await session.handle(.client(subscribe)) { frames.append($0) }
                #expect(frames.map(\.type) == [.subscribed])
                try await api.join(ada, later, invitedBy: coach)
                try await session.handle(.batch(try await Self.batchNow(0, on: database), afterGap: true)) {
                    frames.append($0)
                }
                #expect(!frames.contains { $0.type == .joined }, "joined with no room: \(frames.map(\.summary))")
                let unsubscribe = StreamClientFrame(type: .unsubscribe, communityIds: [club.id])
                try await session.handle(.client(unsubscribe)) { frames.append($0) }
                #expect(frames.filter { $0.type == .joined }.map(\.communityId) == [later.id])
                try await session.handle(.batch(try await Self.batchNow(1, on: database), afterGap: true)) {
                    frames.append($0)
                }
                #expect(frames.filter { $0.type == .joined }.count == 1)
            }
        }
    }
}
