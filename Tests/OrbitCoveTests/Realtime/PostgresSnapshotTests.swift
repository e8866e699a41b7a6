import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// The stream's positions are snapshots compared in Swift: `sees` must be PostgreSQL's own
/// `pg_visible_in_snapshot`, and `includes` must hold exactly when every transaction one
/// snapshot sees the other sees too.
@Suite struct PostgresSnapshotTests {
    /// A random snapshot with transaction ids in 1...60, so that random pairs overlap often.
    static func draw(_ random: inout SplitMix64) -> PostgresSnapshot {
        let xmin = UInt64(random.next() % 40) + 1
        let xmax = xmin + UInt64(random.next() % 20)
        let running = (xmin..<xmax).filter { _ in random.next() % 3 == 0 }
        let text = "\(xmin):\(xmax):" + running.map(String.init).joined(separator: ",")
        guard let snapshot = PostgresSnapshot(text) else { preconditionFailure("drew an invalid snapshot \(text)") }
        return snapshot
    }

    @Test func seeingIsPostgreSQLsVisibility() async throws {
        var random = SplitMix64(seed: 20_261_128)
        var drawn: [(snapshot: PostgresSnapshot, txid: UInt64)] = []
        for _ in 0..<3000 { drawn.append((Self.draw(&random), random.next() % 70)) }
        let pairs = drawn
        let (texts, txids) = (pairs.map(\.snapshot.text), pairs.map { Int64($0.txid) })
        let visible = try await withTestDatabase { database in
            try await database.withConnection { connection in
                var answers: [Bool] = []
                let rows = try await connection.query(
                    """
                    SELECT pg_visible_in_snapshot(t::text::xid8, s::pg_snapshot)
                    FROM unnest(\(texts)::text[], \(txids)::int8[])
                         WITH ORDINALITY AS p(s, t, n)
                    ORDER BY n
                    """, logger: TestEnvironment.logger)
                for try await seen in rows.decode(Bool.self) { answers.append(seen) }
                return answers
            }
        }
        #expect(visible.count == pairs.count)
        for (index, pair) in pairs.enumerated() where index < visible.count {
            #expect(pair.snapshot.sees(pair.txid) == visible[index], "\(pair.snapshot.text) sees \(pair.txid)")
        }
    }

    /// Whatever the parser takes from a client's token PostgreSQL takes too (a sync with a
    /// snapshot PostgreSQL refused was a 500), at the edges of the id range and past them.
    @Test func whatTheParserAcceptsPostgreSQLAccepts() async throws {
        let top = UInt64(Int64.max)
        let texts = [
            "1:1:", "3:10:4,7", "\(top):\(top):", "\(top - 1):\(top):\(top - 1)", "1:\(top + 1):",
            "\(top + 1):\(top + 1):", "1:\(UInt64.max):", "\(UInt64.max):\(UInt64.max):", "1:9223372036854775808:",
            // An id whose low 32 bits are zero is not a valid transaction id (a hostile probe's
            // token, a 500 and a closed stream); one in progress may be.
            "987970:4294967296:", "987970:4294967296000:", "4294967296:4294967297:", "4294967297:4294967297:",
            "987970:8589934593:4294967296",
        ]
        try await withTestDatabase { database in
            for text in texts where PostgresSnapshot(text) != nil {
                let accepted = try? await database.withConnection { connection in
                    try await connection.query("SELECT \(text)::pg_snapshot::text", logger: TestEnvironment.logger)
                        .collect().count
                }
                #expect(accepted == 1, "\(text): parsed here, refused by PostgreSQL")
            }
        }
        #expect(PostgresSnapshot("\(top):\(top):") != nil)
        #expect(
            PostgresSnapshot("987970:4294967297:") != nil && PostgresSnapshot("987970:8589934593:4294967296") != nil)
    }

    /// A position hiding some of the transactions a snapshot sees (the token of a frame in the
    /// middle of a batch) sees none of them, and of the rest, exactly what the snapshot sees;
    /// past `most` of them it sees none of them and nothing the snapshot does not. Its text
    /// is a snapshot this parser (so PostgreSQL, above) takes.
    @Test func hidingLeavesUnseenExactlyWhatItHides() throws {
        var random = SplitMix64(seed: 20_261_201)
        for _ in 0..<3000 {
            let snapshot = Self.draw(&random)
            let seen = (1..<70).map(UInt64.init).filter { snapshot.sees($0) }
            let unseen = Set(seen.filter { _ in random.next() % 4 == 0 })
            let most = Int(random.next() % 6)
            let hidden = snapshot.hiding(unseen, most: most)
            #expect(PostgresSnapshot(hidden.text) == hidden, "\(snapshot.text) hiding \(unseen.sorted())")
            for txid in UInt64(1)..<70 {
                if unseen.contains(txid) {
                    #expect(!hidden.sees(txid))
                } else if unseen.count <= most {
                    #expect(hidden.sees(txid) == snapshot.sees(txid), "\(snapshot.text) \(unseen.sorted()) \(txid)")
                } else {
                    #expect(!hidden.sees(txid) || snapshot.sees(txid))
                }
            }
        }
    }

    @Test func includingIsSeeingEverythingTheOtherSees() {
        var random = SplitMix64(seed: 28_112_026)
        var (included, notIncluded) = (0, 0)
        for _ in 0..<20_000 {
            let (earlier, later) = (Self.draw(&random), Self.draw(&random))
            let expected = (0..<70).allSatisfy { !earlier.sees($0) || later.sees($0) }
            #expect(later.includes(earlier) == expected, "\(later.text) includes \(earlier.text)")
            if expected { included += 1 } else { notIncluded += 1 }
        }
        // Both answers were exercised.
        #expect(included > 1000 && notIncluded > 1000)
    }

    @Test func snapshotsTakenLaterIncludeEarlierOnesWhileTransactionsRunAndEnd() async throws {
        try await withTestDatabase { database in
            try await database.withConnection { reader in
                func snapshot() async throws -> PostgresSnapshot {
                    for try await text in try await reader.query(
                        "SELECT pg_current_snapshot()::text", logger: TestEnvironment.logger
                    ).decode(String.self) {
                        return try #require(PostgresSnapshot(text))
                    }
                    throw TestFailure("no snapshot")
                }
                try await database.withConnection { writer in
                    let before = try await snapshot()
                    try await writer.run("BEGIN", logger: TestEnvironment.logger)
                    try await writer.run("SELECT pg_current_xact_id()", logger: TestEnvironment.logger)
                    let during = try await snapshot()
                    try await writer.run("COMMIT", logger: TestEnvironment.logger)
                    let after = try await snapshot()
                    #expect(during.includes(before) && after.includes(during) && after.includes(before))
                    #expect(!during.includes(after))
                }
            }
        }
    }

    /// A position is ahead of a snapshot when it names a transaction the snapshot's database had
    /// not begun; one taken earlier, at the same time, or with transactions still running is not.
    @Test func aheadIsNamingWhatTheDatabaseHadNotBegun() throws {
        let current = try #require(PostgresSnapshot("100:110:103,105"))
        for (text, ahead) in [
            ("100:110:103,105", false), ("90:95:", false), ("100:110:", false), ("104:111:", true),
            ("1000000:1000000:", true),
        ] {
            let position = try #require(PostgresSnapshot(text))
            #expect(position.isAhead(of: current) == ahead, "\(text)")
        }
    }
}
