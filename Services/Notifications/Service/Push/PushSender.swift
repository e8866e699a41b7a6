import Foundation
import Logging
import Metrics
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Handles a ``PushDue`` job: the rows' pushes go to every device their users have, in
/// parallel, with the unread count as the badge. Rows read or turned off since they were
/// written (push off, quiet hours that held them) are not pushed. Final answers (accepted, or
/// refused for good) are kept as receipts, so a retried job sends only what is still owed;
/// dead tokens are dropped. If APNs asked for a retry, the job throws ``RetryRemainder``: what
/// was done stays, and the job comes back through the queue's retry tiers.
///
/// It works on the job's own connection (the inbox transaction) and never asks the pool for a
/// second one: with as many jobs in flight as the consumer's prefetch, jobs waiting for a
/// second connection could hold every connection between them. Its reads take no row locks,
/// so a member marking a notification read never waits for requests in flight; the rows are
/// written only at the end.
struct PushSender: Sendable {
    let provider: any PushProvider
    let concurrency: Int
    /// How long APNs keeps a push for a device that is off.
    static let keepFor: TimeInterval = 86_400

    /// How long each stage of a job takes, for `/metrics` (and the notifications benchmark,
    /// which prints them): reading the rows with their badges and devices and building the
    /// payloads, the first and the last answer from APNs after the first push went out, and
    /// writing the receipts.
    enum Stage: String, CaseIterable {
        case targets, firstAnswer = "first_answer", lastAnswer = "last_answer", record

        var timer: Metrics.Timer {
            switch self {
            case .targets: Self.timers.targets
            case .firstAnswer: Self.timers.firstAnswer
            case .lastAnswer: Self.timers.lastAnswer
            case .record: Self.timers.record
            }
        }

        private static let timers = (
            targets: make(.targets), firstAnswer: make(.firstAnswer), lastAnswer: make(.lastAnswer),
            record: make(.record)
        )

        private static func make(_ stage: Stage) -> Metrics.Timer {
            Metrics.Timer(label: "orbitcove_push_job_stage_seconds", dimensions: [("stage", stage.rawValue)])
        }
    }

    func send(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let targets = try await Self.targets(ids, on: connection, logger: logger)
        let sending = targets.filter { $0.push != nil }
        let sent = clock.now
        Stage.targets.timer.recordInterval(since: started, until: sent)
        let outcomes = await deliver(sending.compactMap(\.push))
        if !sending.isEmpty { Stage.lastAnswer.timer.recordInterval(since: sent, until: clock.now) }
        let answered = clock.now
        var receipts: [Receipt] = []
        var owed = Set<UUID>()
        for (target, outcome) in zip(sending, outcomes) {
            if outcome.isFinal, let token = target.push?.token {
                receipts.append(Receipt(notificationId: target.notificationId, token: token, outcome: outcome))
            } else {
                owed.insert(target.notificationId)
            }
        }
        let finished = Array(Set(targets.map(\.notificationId)).subtracting(owed))
        try await Self.record(receipts, on: connection, logger: logger)
        try await connection.run(
            "UPDATE notifications SET push_at = NULL WHERE id = ANY(\(finished))", logger: logger)
        Stage.record.timer.recordInterval(since: answered, until: clock.now)
        let retries = outcomes.filter { !$0.isFinal }
        if let first = retries.first {
            throw RetryRemainder("\(retries.count) of \(outcomes.count) pushes to retry; first: \(first)")
        }
    }

    /// Sends every push, at most `concurrency` at a time; outcomes in the pushes' order.
    private func deliver(_ pushes: [PushMessage]) async -> [PushOutcome] {
        await withTaskGroup(of: (Int, PushOutcome).self) { group in
            var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
            var next = 0
            while next < min(concurrency, pushes.count) {
                let (index, push) = (next, pushes[next])
                group.addTask { (index, await provider.send(push)) }
                next += 1
            }
            let started = ContinuousClock.now
            var first = true
            while let (index, outcome) = await group.next() {
                if first {
                    Stage.firstAnswer.timer.recordInterval(since: started, until: .now)
                    first = false
                }
                outcomes[index] = outcome
                if next < pushes.count {
                    let (index, push) = (next, pushes[next])
                    group.addTask { (index, await provider.send(push)) }
                    next += 1
                }
            }
            return outcomes.map { $0 ?? .retry(status: nil, reason: "not sent") }
        }
    }

    /// A row still owed a push, with one device it has not reached (or none: nothing to send).
    struct Target {
        var notificationId: UUID
        var push: PushMessage?
    }

    /// The rows' owed pushes: one per device their user has now that has no receipt yet. A row
    /// read since, or whose member has turned pushes off since, is owed nothing.
    ///
    /// The rows are picked by id alone first (`MATERIALIZED`, so by the primary key): with
    /// `push_at IS NOT NULL` beside the ids, PostgreSQL chose the partial index of owed pushes
    /// whenever its statistics said few were owed, and tested every owed row against the job's
    /// 499 ids; after many unanswered notices that took 0.6 s per job, growing with every event
    /// (BENCHMARKS.md, "Notifications"). The badges are counted in one grouped statement, not
    /// one count per member: on a new database, before PostgreSQL has statistics for
    /// `notifications`, each count read the whole table.
    static func targets(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> [Target] {
        let rows = try await connection.query(
            """
            WITH picked AS MATERIALIZED (
                SELECT * FROM notifications WHERE id = ANY(\(ids))
            ), due AS (
                SELECT n.id, n.user_id, n.community_id, n.type::text AS type, n.title, n.body, n.data::text AS data,
                       n.collapse_id,
                       n.read_at IS NULL AND m.notification_prefs -> 'push' IS DISTINCT FROM 'false'::jsonb AS wanted
                FROM picked n
                LEFT JOIN members m ON m.community_id = n.community_id AND m.user_id = n.user_id
                WHERE n.push_at IS NOT NULL
            ), badges AS (
                SELECT n.user_id, count(*)::int AS unread FROM notifications n
                WHERE n.read_at IS NULL AND n.user_id IN (
                    SELECT user_id FROM due WHERE wanted AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = due.user_id))
                GROUP BY n.user_id
            )
            SELECT due.*, badges.unread, d.token, d.environment, d.bundle_id
            FROM due LEFT JOIN badges USING (user_id)
            LEFT JOIN devices d ON due.wanted AND d.user_id = due.user_id
                AND NOT EXISTS (SELECT 1 FROM push_receipts r WHERE r.notification_id = due.id AND r.token = d.token)
            ORDER BY due.id
            """, logger: logger)
        var targets: [Target] = []
        let expiration = Date().addingTimeInterval(keepFor)
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let id = try columns["id"].decode(UUID.self)
            guard let token = try columns["token"].decode(String?.self) else {
                targets.append(Target(notificationId: id, push: nil))
                continue
            }
            let payload = try PushPayload(
                notificationId: id, type: try columns["type"].decode(String.self),
                title: try columns["title"].decode(String.self), body: try columns["body"].decode(String.self),
                communityId: try columns["community_id"].decode(UUID?.self),
                data: try columns["data"].decode(String.self), badge: try columns["unread"].decode(Int?.self) ?? 0
            ).bytes()
            targets.append(
                Target(
                    notificationId: id,
                    push: PushMessage(
                        token: token,
                        environment: PushEnvironment(rawValue: try columns["environment"].decode(String.self))
                            ?? .production,
                        topic: try columns["bundle_id"].decode(String.self), payload: payload,
                        collapseId: try columns["collapse_id"].decode(String?.self), expiration: expiration)))
        }
        return targets
    }

    /// A final answer for one row on one device.
    struct Receipt {
        var notificationId: UUID
        var token: String
        var outcome: PushOutcome
    }

    /// Receipts for final answers, and dead tokens dropped (unless re-registered after APNs
    /// found them dead).
    private static func record(_ receipts: [Receipt], on connection: PostgresConnection, logger: Logger) async throws {
        guard !receipts.isEmpty else { return }
        // Arrays without NULLs, bound as parameters: '' stands for none.
        var (ids, tokens, statuses, apnsIds, reasons) = ([UUID](), [String](), [Int](), [String](), [String]())
        var dead: [String] = []
        var deadSince: [Date] = []
        for receipt in receipts {
            let (status, apnsId, reason): (Int, String?, String?)
            switch receipt.outcome {
            case .accepted(let id):
                (status, apnsId, reason) = (200, id.flatMap { UUID(uuidString: $0)?.lowercasedString }, nil)
            case .refused(let code, let why, let drop, let since):
                (status, apnsId, reason) = (code, nil, String(why.prefix(100)))
                if drop {
                    dead.append(receipt.token)
                    deadSince.append(since ?? .distantFuture)
                }
            case .retry:
                continue  // not final: no receipt (the caller passes final answers only)
            }
            ids.append(receipt.notificationId)
            tokens.append(receipt.token)
            statuses.append(status)
            apnsIds.append(apnsId ?? "")
            reasons.append(reason ?? "")
        }
        try await connection.run(
            """
            INSERT INTO push_receipts (notification_id, token, status, apns_id, reason)
            SELECT id, token, status, nullif(apns_id, '')::uuid, nullif(reason, '')
            FROM unnest(\(ids)::uuid[], \(tokens)::text[], \(statuses)::int[], \(apnsIds)::text[], \(reasons)::text[])
                AS receipt(id, token, status, apns_id, reason)
            ON CONFLICT DO NOTHING
            """, logger: logger)
        guard !dead.isEmpty else { return }
        try await connection.run(
            """
            DELETE FROM devices d USING unnest(\(dead)::text[], \(deadSince)::timestamptz[]) AS gone(token, since)
            WHERE d.token = gone.token AND d.updated_at < gone.since
            """, logger: logger)
        logger.info("dropped dead device tokens", metadata: ["count": "\(dead.count)"])
    }
}

extension Metrics.Timer {
    fileprivate func recordInterval(since start: ContinuousClock.Instant, until end: ContinuousClock.Instant) {
        let elapsed = start.duration(to: end).components
        recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}
