import Foundation
import Logging
import OrbitCoveInfra
import ServiceLifecycle
import Synchronization

/// This instance's open streams, and the Redis subscription that feeds them: each batch of a
/// shard goes to the streams following one of that shard's communities, and to the streams of
/// a user whose own membership it changes (a join or a removal). It hands each stream a batch
/// without waiting for it; a stream that lets too many wait is disconnected
/// (``StreamConnection/offer(_:)``), so one slow client never holds up the others, and the
/// instance's own Redis connection never falls behind for a client's sake.
final class StreamHub: Service, Sendable {
    private struct State {
        var connections: [UUID: StreamConnection] = [:]
        /// Per shard, the streams following one of its communities, with how many.
        var byShard: [Int: [UUID: Int]] = [:]
        var byUser: [UUID: Set<UUID>] = [:]
        /// Per shard, the `next` of the last batch received.
        var lastNext: [Int: String] = [:]
    }

    private let state = Mutex(State())
    private let database: Database
    private let redis: RedisClient
    private let maxStreamsPerUser: Int
    private let logger: Logger
    /// Rung when some instance announces a first open stream (this one's included): the change
    /// feed's reader, if it runs here, stops waiting for its tick.
    private let listenersArrived: Doorbell
    /// Rung by each new stream, so that ``sayListening(in:)`` says so at once.
    private let opened = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// The Redis namespace of the batches it takes and of its word that it listens (another only
    /// in tests); nil: the database's (``StreamBatch/namespace(on:logger:)``).
    private let givenNamespace: String?

    init(
        database: Database, redis: RedisClient, maxStreamsPerUser: Int, logger: Logger, listenersArrived: Doorbell,
        namespace: String? = nil
    ) {
        self.database = database
        self.listenersArrived = listenersArrived
        self.redis = redis
        self.maxStreamsPerUser = maxStreamsPerUser
        self.logger = logger
        self.givenNamespace = namespace
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var namespace = self.givenNamespace
            while namespace == nil && !Task.isCancelled {
                do {
                    namespace = try await self.database.withConnection {
                        try await StreamBatch.namespace(on: $0, logger: self.logger)
                    }
                } catch {
                    self.logger.warning(
                        "cannot name the stream's channels yet", metadata: ["error": .string(logDescription(of: error))]
                    )
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            guard let namespace else { return }
            await withDiscardingTaskGroup { group in
                group.addTask { await self.sayListening(in: namespace) }
                let arrivals = StreamBatch.arrivalsChannel(in: namespace)
                for await message in self.redis.subscribe(
                    to: StreamBatch.channels(in: namespace) + [arrivals], name: Self.subscriberName)
                {
                    if message.channel == arrivals {
                        self.listenersArrived.ring()
                    } else {
                        self.dispatch(message.message)
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// While this instance has a stream open, says so in Redis every second
    /// (``StreamBatch/listeningKey(in:)``), and at once when one opens. A word that starts the
    /// listening (no instance's word was there: a first stream, or the key lapsed) is announced
    /// (``StreamBatch/arrivalsChannel(in:)``): the change feed's reader, on whichever instance it
    /// runs, wakes and reads the log at its poll; an announcement lost (a subscription not up
    /// yet) costs it at most a tick. With no stream open it waits for one without waking.
    /// Run once, as the hub is: its doorbell ends with the task that waits on it.
    private func sayListening(in namespace: String) async {
        var bell = opened.stream.makeAsyncIterator()
        let key = StreamBatch.listeningKey(in: namespace)
        while !Task.isCancelled {
            guard openStreams > 0 else {
                // A stream added since the count was read has rung already (the bell keeps one).
                guard await bell.next() != nil else { return }
                continue
            }
            do {
                let before = try await redis.command([
                    "SET", key, "1", "EX", String(StreamBatch.listeningSeconds), "GET",
                ])
                if before == .null {
                    // This instance's reader, if it leads, need not wait for the subscription.
                    listenersArrived.ring()
                    _ = try await redis.publish(channel: StreamBatch.arrivalsChannel(in: namespace), message: "1")
                }
            } catch {
                logger.debug(
                    "cannot say this instance's streams are open",
                    metadata: ["error": .string(logDescription(of: error))])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The name of each instance's subscription in Redis's `CLIENT LIST`.
    static let subscriberName = "orbitcove-stream"

    var openStreams: Int { state.withLock { $0.connections.count } }

    /// Registers a new stream; false when its user already holds as many as allowed.
    func add(_ connection: StreamConnection) -> Bool {
        state.withLock { state in
            guard state.byUser[connection.userId, default: []].count < maxStreamsPerUser else { return false }
            state.connections[connection.id] = connection
            state.byUser[connection.userId, default: []].insert(connection.id)
            opened.continuation.yield()
            return true
        }
    }

    func remove(_ connection: StreamConnection) {
        state.withLock { state in
            state.connections[connection.id] = nil
            state.byUser[connection.userId]?.remove(connection.id)
            if state.byUser[connection.userId]?.isEmpty == true { state.byUser[connection.userId] = nil }
            for shard in state.byShard.keys { state.byShard[shard]?[connection.id] = nil }
        }
    }

    func follow(_ community: UUID, by connection: StreamConnection) {
        state.withLock { state in
            state.byShard[StreamBatch.shard(of: community), default: [:]][connection.id, default: 0] += 1
        }
    }

    func unfollow(_ community: UUID, by connection: StreamConnection) {
        state.withLock { Self.unfollow(community, connection.id, in: &$0) }
    }

    private static func unfollow(_ community: UUID, _ connection: UUID, in state: inout State) {
        let shard = StreamBatch.shard(of: community)
        guard let count = state.byShard[shard]?[connection] else { return }
        state.byShard[shard]?[connection] = count > 1 ? count - 1 : nil
    }

    func dispatch(_ message: String) {
        let batch: StreamBatch
        do {
            batch = try JSONDecoder().decode(StreamBatch.self, from: Data(message.utf8))
        } catch {
            logger.warning("unreadable realtime batch", metadata: ["error": .string("\(error)")])
            return
        }
        // A membership or a user's own notifications reach that user's streams wherever they are.
        let members = Set(
            (batch.changes ?? []).lazy.filter { $0.kind == "member" || $0.kind == StreamBatch.unread }.map(\.id))
        let (targets, afterGap): ([StreamConnection], Bool) = state.withLock { state in
            // A batch that does not follow the last one received (Redis dropped one, or this
            // instance's subscription was cut), the first this instance hears (a stream may
            // have opened before its subscription did), or the first of a new reader (what the
            // old one read last may never have been published): any stream may have missed a
            // join, so every stream gets it and checks (``StreamSession``).
            let last = state.lastNext.updateValue(batch.next, forKey: batch.shard)
            let afterGap = batch.previous == nil || last != batch.previous
            if afterGap { return (Array(state.connections.values), true) }
            var ids = Set(state.byShard[batch.shard]?.keys ?? [:].keys)
            for user in members { ids.formUnion(state.byUser[user] ?? []) }
            return (ids.compactMap { state.connections[$0] }, false)
        }
        for connection in targets { connection.offer(.batch(batch, afterGap: afterGap)) }
    }
}
