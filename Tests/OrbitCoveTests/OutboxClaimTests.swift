import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// The relay's claim keeps each community's messages in order across relays: a community's row
/// waits while an earlier row of that community is in flight (claimed elsewhere, its lease
/// running); rows of other communities, rows without one, and rows behind an expired claim go.
/// Run against a temporary `outbox` of the transaction's own (it shadows the real one, whose
/// rows belong to the relays of the tests running beside this one), with the production statement.
@Suite struct OutboxClaimTests {
    @Test func aCommunitysRowWaitsWhileAnEarlierOneIsInFlight() async throws {
        try await withTestDatabase { database in
            let (a, b, c) = (UUID(), UUID(), UUID())
            let claimed: [String] = try await database.transaction(scope: .system) { connection in
                try await connection.run(
                    "CREATE TEMP TABLE outbox (LIKE public.outbox INCLUDING ALL) ON COMMIT DROP",
                    logger: TestEnvironment.logger)
                // name, community, claimed until (seconds from now; nil: never claimed), in seq order.
                let rows: [(String, UUID?, Int?)] = [
                    ("a1", a, 30), ("b1", b, nil), ("a2", a, nil), ("c1", c, -1), ("none", nil, nil),
                    ("c2", c, nil), ("b2", b, nil), ("a3", a, nil),
                ]
                for (name, community, lease) in rows {
                    try await connection.run(
                        """
                        INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, data,
                                            claimed_until)
                        VALUES (gen_random_uuid(), 'test-claim', \(name), 1, now(), \(community), '{}',
                                now() + \(lease) * interval '1 second')
                        """, logger: TestEnvironment.logger)
                }
                let names = try await Self.claim(on: connection)
                // Claimed now: a second claim finds b and c in flight too.
                let again = try await Self.claim(on: connection)
                #expect(again.isEmpty, "\(again)")
                return names
            }
            // a1 is in flight: a2 and a3 wait. c1's claim ran out: c1 goes, and c2 behind it
            // (c1 is claimed by this same statement, not in flight before it). b1 and b2 go.
            #expect(Set(claimed) == ["b1", "c1", "none", "c2", "b2"], "\(claimed)")
        }
    }

    /// A claim reads the rows it takes and the rows in flight, not the backlog behind them,
    /// whatever PostgreSQL's statistics say. A queue table's statistics are always out of date:
    /// analyzed while everything was published, they say no row is waiting, and a burst of
    /// 100,000 messages then met a plan that read and sorted every waiting row on every claim
    /// (400 ms a claim in the reminders benchmark, with every relay queued behind its lock).
    /// Checked in three states: no statistics, statistics from before the burst, and fresh ones.
    @Test func aClaimReadsWhatItTakesNotTheBacklog() async throws {
        try await withTestDatabase { database in
            let read: [String: Int] = try await database.transaction(scope: .system) { connection in
                try await connection.run(
                    "CREATE TEMP TABLE outbox (LIKE public.outbox INCLUDING ALL) ON COMMIT DROP",
                    logger: TestEnvironment.logger)
                var read: [String: Int] = [:]
                // 20,000 published rows, then 20,000 waiting in 500 communities, 400 of them in flight.
                try await Self.fill(published: true, on: connection)
                try await Self.fill(published: false, on: connection)
                read["no statistics"] = try await Self.rowsRead(on: connection)
                try await connection.run("ANALYZE pg_temp.outbox", logger: TestEnvironment.logger)
                read["fresh statistics"] = try await Self.rowsRead(on: connection)
                try await connection.run(
                    "UPDATE pg_temp.outbox SET published_at = now(), claimed_until = NULL",
                    logger: TestEnvironment.logger)
                try await connection.run("ANALYZE pg_temp.outbox", logger: TestEnvironment.logger)
                try await Self.fill(published: false, on: connection)
                read["statistics from before the burst"] = try await Self.rowsRead(on: connection)
                return read
            }
            // 100 taken and 400 in flight are read, and up to 400 in flight skipped on the way.
            for (state, rows) in read { #expect(rows < 2_000, "\(state): \(rows) rows read") }
        }
    }

    private static func fill(published: Bool, on connection: PostgresConnection) async throws {
        try await connection.run(
            """
            INSERT INTO pg_temp.outbox (id, queue, message_type, message_version, occurred_at, community_id, data,
                                        published_at)
            SELECT gen_random_uuid(), 'test-claim', 'burst', 1, now(),
                   ('00000000-0000-4000-8000-' || lpad((g % 500)::text, 12, '0'))::uuid, '{}',
                   CASE WHEN \(published) THEN now() END
            FROM generate_series(1, 20000) g
            """, logger: TestEnvironment.logger)
        if !published {
            try await connection.run(
                """
                UPDATE pg_temp.outbox SET claimed_until = now() + interval '30 seconds'
                WHERE id IN (SELECT id FROM pg_temp.outbox WHERE published_at IS NULL ORDER BY seq LIMIT 400)
                """, logger: TestEnvironment.logger)
        }
    }

    /// Rows of `outbox` one claim's plan visited (returned or filtered out, every loop), the
    /// relay's planner settings applied; the claim itself is undone.
    private static func rowsRead(on connection: PostgresConnection) async throws -> Int {
        try await connection.run("SAVEPOINT claim", logger: TestEnvironment.logger)
        try await connection.run(OutboxRelay.claimSettings, logger: TestEnvironment.logger)
        let claim = OutboxRelay.claimStatement(batchSize: 100, leaseSeconds: 30)
        var plan = ""
        for try await text in try await connection.query(
            PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, FORMAT JSON) " + claim.sql, binds: claim.binds),
            logger: TestEnvironment.logger
        ).decode(String.self) { plan += text }
        try await connection.run("ROLLBACK TO SAVEPOINT claim", logger: TestEnvironment.logger)
        let root = try JSONSerialization.jsonObject(with: Data(plan.utf8)) as? [[String: Any]]
        return Self.rowsRead(root?.first?["Plan"] as? [String: Any] ?? [:])
    }

    private static func rowsRead(_ node: [String: Any]) -> Int {
        var rows = 0
        if node["Relation Name"] as? String == "outbox", node["Node Type"] as? String != "ModifyTable" {
            let loops = node["Actual Loops"] as? Int ?? 1
            rows += ((node["Actual Rows"] as? Int ?? 0) + (node["Rows Removed by Filter"] as? Int ?? 0)) * loops
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { rows += rowsRead(child) }
        return rows
    }

    /// The names (message types) of the rows one claim takes.
    static func claim(on connection: PostgresConnection) async throws -> [String] {
        var names: [String] = []
        for try await row in try await connection.query(
            OutboxRelay.claimStatement(batchSize: 100, leaseSeconds: 30), logger: TestEnvironment.logger)
        {
            let (_, _, _, type, _, _) = try row.decode((Int64, UUID, String, String, String, String?).self)
            names.append(type)
        }
        return names
    }
}
