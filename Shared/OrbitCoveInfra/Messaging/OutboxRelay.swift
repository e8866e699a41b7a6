import Foundation
import Logging
import Metrics
import OrbitCoveModels
import PostgresNIO
import ServiceLifecycle

/// Publishes outbox rows to the broker. Claims a batch in `seq` order with
/// `FOR UPDATE SKIP LOCKED` and a short lease (so replicas never publish the same row at the
/// same time, and a crashed relay's claim expires), publishes it with confirms, and marks the
/// confirmed rows published. Woken by its process's own commits (``OutboxWakeups``) and polls
/// for the rest.
package final class OutboxRelay: Service, Sendable {
    private let database: Database
    private let publisher: AMQPPublisher
    private let appId: String
    private let batchSize: Int
    private let pollInterval: Duration
    private let lease: Duration
    private let logger: Logger
    private let retention: Duration
    private let published: Counter
    private let failures: Counter
    private let backlog: Gauge
    private let oldestAge: Gauge

    /// Any constant works; every relay must use the same one.
    static let claimLockKey: Int64 = 0x4F52_4249_4F55_5442  // "ORBIOUTB"

    package init(
        database: Database, publisher: AMQPPublisher, appId: String, batchSize: Int = 200,
        pollInterval: Duration = .seconds(5), lease: Duration = .seconds(30), retention: Duration = .seconds(7 * 86400),
        logger: Logger
    ) {
        self.database = database
        self.publisher = publisher
        self.appId = appId
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.lease = lease
        self.retention = retention
        self.logger = logger
        self.published = Counter(label: "orbitcove_outbox_published_total")
        self.failures = Counter(label: "orbitcove_outbox_publish_failures_total")
        self.backlog = Gauge(label: "orbitcove_outbox_unpublished")
        self.oldestAge = Gauge(label: "orbitcove_outbox_oldest_unpublished_seconds")
    }

    package func run() async throws {
        let wakeups = database.outboxWakeups.stream()
        await cancelWhenGracefulShutdown {
            var backoff = Backoff(base: .milliseconds(500), cap: .seconds(15))
            await withTaskGroup(of: Void.self) { group in
                // A wake-up means this process committed a message: claim at once. A tick of the
                // poll claims only when `outbox_backlog()` finds something unpublished, so an idle
                // service costs one small statement per interval.
                let (ticks, tick) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
                // At the start, whatever was left (a restart, a commit before the stream existed).
                tick.yield(true)
                group.addTask { for await _ in wakeups { tick.yield(true) } }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: self.pollInterval)
                        tick.yield(false)
                    }
                }
                var lastMeasured = ContinuousClock.now - .seconds(60)
                var lastPruned = ContinuousClock.now
                for await woken in ticks {
                    if Task.isCancelled { break }
                    do {
                        if ContinuousClock.now - lastPruned >= .seconds(600) {
                            lastPruned = ContinuousClock.now
                            try await self.prune()
                        }
                        if !woken || ContinuousClock.now - lastMeasured >= .seconds(5) {
                            lastMeasured = ContinuousClock.now
                            let status = try await OutboxStatus.read(from: self.database, logger: self.logger)
                            self.backlog.record(status.unpublished)
                            self.oldestAge.record(status.oldestUnpublishedAge ?? 0)
                            if !woken && status.unpublished == 0 { continue }
                        }
                        // Until a claim finds nothing: a row that waited behind one of its
                        // community's rows in flight here (another replica skipped it) is taken
                        // by this relay once that one is published, not left for a poll.
                        while try await self.relayBatch() > 0 {}
                        backoff.reset()
                        await self.publisher.keepAlive()
                    } catch {
                        if Task.isCancelled { break }
                        self.failures.increment()
                        let delay = backoff.next()
                        self.logger.warning(
                            "outbox relay failed; will retry",
                            metadata: [
                                "error": .string(logDescription(of: error)), "retryIn": .stringConvertible(delay),
                            ])
                        try? await Task.sleep(for: delay)
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// Publishes one batch; returns how many rows it claimed.
    package func relayBatch() async throws -> Int {
        let rows = try await claim()
        guard !rows.isEmpty else { return 0 }
        let messages = rows.map { row in
            OutgoingMessage(
                id: row.id, type: row.type, routingKey: row.queue, body: Array(row.body.utf8),
                headers: row.traceparent.map { ["traceparent": $0] } ?? [:], appId: appId)
        }
        let confirmed: Set<UUID>
        do {
            confirmed = try await publisher.publish(messages)
        } catch {
            let ids = rows.map(\.id)
            try await Self.completing { try await self.release(ids, error: "\(error)") }
            throw error
        }
        let refused = rows.map(\.id).filter { !confirmed.contains($0) }
        try await Self.completing {
            try await self.markPublished(Array(confirmed))
            if !refused.isEmpty { try await self.holdBack(refused, error: "not confirmed by the broker") }
        }
        published.increment(by: confirmed.count)
        return rows.count
    }

    /// Runs `work` to the end even while the relay is being stopped (its task cancelled): a
    /// claim left neither released nor marked published would hold its rows, and every later
    /// message of their communities, for the rest of the lease. An unstructured task does not
    /// inherit the cancellation.
    private static func completing(_ work: @escaping @Sendable () async throws -> Void) async throws {
        try await Task { try await work() }.value
    }

    private struct Row {
        let id: UUID
        let queue: String
        let type: String
        let body: String
        let traceparent: String?
    }

    private func claim() async throws -> [Row] {
        let leaseSeconds = Double(lease.components.seconds)
        return try await database.transaction(scope: .system) { connection in
            // Claims are taken one relay at a time (a transaction-scoped advisory lock, held for
            // the few milliseconds of this statement), so the check below sees every other
            // relay's committed claims: a community's row waits while an earlier row of the same
            // community is in flight elsewhere, which keeps each community's messages in order.
            try await connection.run(Self.claimSettings, logger: logger)
            let rows = try await connection.query(
                Self.claimStatement(batchSize: batchSize, leaseSeconds: leaseSeconds), logger: logger)
            var claimed: [(Int64, Row)] = []
            for try await row in rows {
                var cells = RowReader(row)
                let seq: Int64 = try cells.next("seq")
                claimed.append(
                    (
                        seq,
                        Row(
                            id: try cells.next("id"), queue: try cells.next("queue"),
                            type: try cells.next("message_type"),
                            body: try cells.next("body"), traceparent: try cells.next("traceparent"))
                    ))
            }
            return claimed.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Run in the claim's transaction before ``claimStatement(batchSize:leaseSeconds:)``: takes the
    /// claim lock, and leaves the planner one way to run the claim whatever its statistics say.
    /// A queue table's statistics are always out of date (analyzed while nothing waited, they
    /// say nothing waits), and with them PostgreSQL read and sorted the whole backlog on every
    /// claim (400 ms a claim under the reminders benchmark's 100,000 messages). With bitmap
    /// scans, sorts and hash aggregation off for this one transaction, the waiting rows are
    /// walked in `seq` order from the partial index and the walk stops once the batch is full
    /// (rows held back behind their community's row in flight are walked past), and the rows in
    /// flight are read from their own index (migration 0047), already grouped.
    /// `OutboxClaimTests.aClaimReadsWhatItTakesNotTheBacklog` checks the plan in three states.
    package static var claimSettings: PostgresQuery {
        """
        SELECT pg_advisory_xact_lock(\(claimLockKey)), set_config('enable_bitmapscan', 'off', true),
               set_config('enable_sort', 'off', true), set_config('enable_hashagg', 'off', true)
        """
    }

    /// Claims up to `batchSize` unpublished rows in `seq` order for `leaseSeconds`, leaving out
    /// a community's row while an earlier row of that community is in flight (claimed, not yet
    /// published or released, its lease running); returns them with their message bodies.
    package static func claimStatement(batchSize: Int, leaseSeconds: Double) -> PostgresQuery {
        """
        WITH in_flight AS MATERIALIZED (
            -- Each community's earliest row in flight (migration 0047's index holds only
            -- claimed rows, so this reads a few hundred rows however long the backlog).
            SELECT community_id, min(seq) AS first FROM outbox
            WHERE published_at IS NULL AND claimed_until IS NOT NULL AND claimed_until >= NOW()
              AND community_id IS NOT NULL
            GROUP BY community_id
        ), batch AS (
            SELECT id FROM outbox o
            WHERE published_at IS NULL AND (claimed_until IS NULL OR claimed_until < NOW())
              AND NOT EXISTS (
                  SELECT 1 FROM in_flight f WHERE f.community_id = o.community_id AND f.first < o.seq)
            ORDER BY seq
            LIMIT \(batchSize)
            FOR UPDATE SKIP LOCKED
        )
        UPDATE outbox o
        SET claimed_until = NOW() + make_interval(secs => \(leaseSeconds)), attempts = o.attempts + 1
        FROM batch WHERE o.id = batch.id
        RETURNING o.seq, o.id, o.queue, o.message_type,
            json_build_object(
                'id', o.id, 'type', o.message_type, 'version', o.message_version,
                'occurredAt', to_char(o.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'communityId', o.community_id, 'actorId', o.actor_id, 'data', o.data)::text AS body,
            o.traceparent
        """
    }

    /// Deletes published rows older than the retention period, a batch at a time.
    package func prune() async throws {
        let retentionSeconds = Double(retention.components.seconds)
        var deleted = 0
        while true {
            let rows = try await database.systemQuery(
                """
                WITH old AS (
                    SELECT id FROM outbox
                    WHERE published_at IS NOT NULL AND published_at < NOW() - make_interval(secs => \(retentionSeconds))
                    LIMIT 5000
                )
                DELETE FROM outbox WHERE id IN (SELECT id FROM old) RETURNING 1
                """)
            let batch = rows.count
            deleted += batch
            if batch < 5000 { break }
        }
        if deleted > 0 { logger.info("pruned published outbox rows", metadata: ["rows": .stringConvertible(deleted)]) }
    }

    private func markPublished(_ ids: [UUID]) async throws {
        guard !ids.isEmpty else { return }
        try await database.systemQuery(
            "UPDATE outbox SET published_at = NOW(), claimed_until = NULL, last_error = NULL WHERE id = ANY(\(ids))")
    }

    /// Releases rows the broker refused (a nack, as a queue at its length limit gives with
    /// `x-overflow: reject-publish`, or a return, unroutable) for a later attempt: each is held
    /// back for 5 s, doubling with each attempt up to a minute. Released at once, they were
    /// claimed again by the same loop that had just counted them as claimed, and published and
    /// refused again, for as long as the broker refused: a core's worth of CPU (probe 18). A held
    /// row keeps its community's later rows waiting, as one in flight does, so a community's
    /// messages still go in order.
    private func holdBack(_ ids: [UUID], error: String) async throws {
        try await database.systemQuery(
            """
            UPDATE outbox
            SET claimed_until = NOW() + make_interval(secs => least(60, 5 * power(2, least(attempts - 1, 4)))),
                last_error = \(error)
            WHERE id = ANY(\(ids))
            """)
    }

    private func release(_ ids: [UUID], error: String) async throws {
        try await database.systemQuery(
            "UPDATE outbox SET claimed_until = NULL, last_error = \(String(error.prefix(500))) WHERE id = ANY(\(ids))")
    }
}
