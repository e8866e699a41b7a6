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
