import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO
import ServiceLifecycle

/// Notices each committed change once for every instance: the instance holding a PostgreSQL
/// advisory lock reads what the change log gained since its last read, by snapshot
/// (`realtime_changes`, migration 0048), every ``StreamSettings/pollMilliseconds``, and
/// publishes it per shard to Redis, while some instance has a stream open (``StreamHub`` says so
/// in Redis); with none open, only at each tick, asleep between ticks until a hub announces a
/// first stream (``listenersArrived``). The others wait for the lock (a reader that
/// dies drops its connection, and with it the lock). Change ids are given at insert, not at
/// commit, so the log is read by snapshot, never tailed by id.
///
/// Redis pub/sub may lose a publication; the batches say what they follow, so an instance
/// that missed one reads the log instead (``StreamConnection``). Every shard is published at
/// least every ``StreamSettings/tickSeconds``, so a miss on a quiet shard is found within that.
package struct StreamChangeFeed: Service {
    /// `pg_try_advisory_lock`'s key: "orbstrm".
    package static let lockKey: Int64 = 0x6f_72_62_73_74_72_6d

    let database: Database
    let redis: RedisClient
    let settings: StreamSettings
    let logger: Logger
    /// The advisory lock's key (another only in tests, for a feed that must lead at once).
    let lockKey: Int64
    /// The Redis namespace of its batches and of the instances' word that they listen
    /// (another only in tests, for a feed nobody else's streams are heard by); nil: the
    /// database's (``StreamBatch/namespace(on:logger:)``).
    let namespace: String?
    /// Rung when an instance announces that it has a stream open where it had none
    /// (``StreamHub`` hears it on its subscription): the idle reader's wake-up.
    let listenersArrived: Doorbell
    /// How many times this feed has read the change log (its tests count it).
    package let reads = AtomicCount()

    package init(
        database: Database, redis: RedisClient, settings: StreamSettings, logger: Logger,
        listenersArrived: Doorbell, lockKey: Int64 = StreamChangeFeed.lockKey, namespace: String? = nil
    ) {
        self.database = database
        self.listenersArrived = listenersArrived
        self.redis = redis
        self.settings = settings
        self.logger = logger
        self.lockKey = lockKey
        self.namespace = namespace
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await leadWhileLocked()
                } catch {
                    if !Task.isCancelled {
                        logger.warning(
                            "realtime change feed stopped; retrying",
                            metadata: ["error": .string(logDescription(of: error))])
                    }
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reads and publishes while this instance holds the lock; returns at once when another does.
    private func leadWhileLocked() async throws {
        try await database.withConnection { connection in
            var locked = false
            for try await value in try await connection.query(
                "SELECT pg_try_advisory_lock(\(lockKey))", logger: logger
            ).decode(Bool.self) { locked = value }
            guard locked else { return }
            logger.info("reading the change log for the realtime stream")
            // The lock belongs to the connection: however leading ends, the connection is
            // closed, and PostgreSQL releases the lock with it (the pool opens another in its
            // place). Handed back to the pool instead, its next lease would hold the lock
            // unawares; and an unlock statement sent while the service stops, as the pool shuts
            // down, never returned, so the service never stopped.
            do {
                try await lead(on: connection)
            } catch {
                try? await connection.close()
                throw error
            }
            try? await connection.close()
        }
    }

    private func lead(on connection: PostgresConnection) async throws {
        let namespace =
            if let given = self.namespace { given } else {
                try await StreamBatch.namespace(on: connection, logger: logger)
            }
        var previous: [Int: String] = [:]
        var read: String?
        let clock = ContinuousClock()
        let tick = Duration.seconds(settings.tickSeconds)
        // The first poll publishes every shard, so a new reader's first batches (which follow
        // nothing) share one snapshot: a stream checks for missed joins once, not per shard.
        var lastTick = clock.now - tick
        var lastPrune = clock.now
        while !Task.isCancelled {
            let started = clock.now
            let ticking = started - lastTick >= tick
            // Nobody listening: the log is read at the tick alone (the shards' heartbeats), and
            // nothing wakes in between but a hub's announcement of a first stream; a stream that
            // opens reads the log itself up to the moment it follows the batches.
            let heard = ticking ? true : await listening(in: namespace)
            guard heard else {
                _ = await listenersArrived.wait(until: lastTick + tick)
                continue
            }
            let (snapshot, readAt, changes) = try await poll(since: read, on: connection)
            reads.add()
            if ticking { lastTick = started }
            var byShard: [Int: [StreamBatch.Change]] = [:]
            for change in changes { byShard[StreamBatch.shard(of: change.community), default: []].append(change) }
            for shard in 0..<StreamBatch.shards where ticking || byShard[shard] != nil {
                let shardChanges = byShard[shard] ?? []
                let inline = shardChanges.count <= StreamBatch.largestInline
                let batch = StreamBatch(
                    shard: shard, previous: previous[shard], next: snapshot, readAt: readAt,
                    changes: inline ? shardChanges : nil,
                    communities: inline ? nil : Array(Set(shardChanges.map(\.community))))
                previous[shard] = snapshot
                await publish(batch, in: namespace)
            }
            read = snapshot
            if started - lastPrune >= .seconds(60) {
                lastPrune = started
                try await Self.asSystem(on: connection, logger: logger) { connection in
                    try await connection.run("SELECT realtime_prune()", logger: logger)
                }
            }
            try await Task.sleep(until: started + .milliseconds(settings.pollMilliseconds), clock: clock)
        }
    }

    /// Runs `body` in a transaction of system scope on the lock's own connection: the feed's
    /// functions read every community, so PostgreSQL serves them to system work alone
    /// (migration 0049).
    private static func asSystem<Result: Sendable>(
        on connection: PostgresConnection, logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await connection.inTransaction(logger: logger) { connection in
            try await connection.run("SELECT set_config('app.system', 'on', true)", logger: logger)
            return try await body(connection)
        }
    }

    private func poll(
        since: String?, on connection: PostgresConnection
    ) async throws -> (snapshot: String, readAt: Int64, changes: [StreamBatch.Change]) {
        let logger = self.logger
        let (snapshot, readAt, changes) = try await Self.asSystem(on: connection, logger: logger) { connection in
            var snapshot = ""
            var readAt = Date()
            var changes: [StreamBatch.Change] = []
            let rows = try await connection.query(
                """
                SELECT snapshot, read_at, community_id, entity_kind, entity_id, operation, txid
                FROM realtime_changes(\(since))
                """, logger: logger)
            for try await (text, time, community, kind, id, operation, txid) in rows.decode(
                (String, Date, UUID?, String?, UUID?, String?, String?).self)
            {
                (snapshot, readAt) = (text, time)
                guard let kind, let id, let operation, let txid = txid.flatMap(UInt64.init) else { continue }
                // A user's unread count travels on the user's shard, named by the user.
                guard let community = community ?? (kind == StreamBatch.unread ? id : nil) else { continue }
                changes.append(.init(community: community, kind: kind, id: id, operation: operation, txid: txid))
            }
            return (snapshot, readAt, StreamBatch.Change.oncePerCommit(changes))
        }
        guard !snapshot.isEmpty else { throw StreamFeedError(message: "realtime_changes returned no snapshot") }
        return (snapshot, Int64((readAt.timeIntervalSince1970 * 1_000_000).rounded()), changes)
    }

    /// Whether some instance has a stream open (``StreamHub`` says so in Redis); when Redis
    /// cannot say, yes: a read too many costs less than a stream kept waiting.
    private func listening(in namespace: String) async -> Bool {
        do {
            return try await redis.get(StreamBatch.listeningKey(in: namespace)) != nil
        } catch {
            return true
        }
    }

    /// A publication Redis does not take is as good as lost: the next one tells instances so.
    private func publish(_ batch: StreamBatch, in namespace: String) async {
        do {
            let message = String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)
            _ = try await redis.publish(channel: StreamBatch.channel(batch.shard, in: namespace), message: message)
        } catch {
            logger.debug("realtime batch not published", metadata: ["error": .string(logDescription(of: error))])
        }
    }
}

struct StreamFeedError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
