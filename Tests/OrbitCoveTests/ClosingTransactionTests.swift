import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// `Database.closingTransaction`: the last statement and the COMMIT go out together, and the
/// transaction still commits whole or not at all, whichever of its parts fails: the body, the
/// closing statement, or the COMMIT itself. Real database, a table of the test's own.
@Suite struct ClosingTransactionTests {
    struct Refused: Error {}

    @Test func theBodyAndItsClosingStatementCommitTogetherOrNeither() async throws {
        let table = "closing_\(UUID().uuidString.prefix(8).lowercased())"
        // Checked at once: 'bad' fails its statement. Unique at the COMMIT: a duplicate fails it.
        try await MessageBatchTests.owner(
            """
            CREATE TABLE \(table) (note text NOT NULL CHECK (note <> 'bad') UNIQUE DEFERRABLE INITIALLY DEFERRED);
            GRANT SELECT, INSERT ON \(table) TO orbitcove_app
            """)
        defer { Task { try? await MessageBatchTests.owner("DROP TABLE \(table)") } }
        try await withTestDatabase { database in
            func insert(_ note: String) -> PostgresQuery {
                "INSERT INTO \(unescaped: table) VALUES (\(note)) RETURNING note"
            }
            func notes() async throws -> [String] {
                try await database.transaction { connection in
                    let rows = try await connection.query(
                        "SELECT note FROM \(unescaped: table) ORDER BY note", logger: logger)
                    var notes: [String] = []
                    for try await note in rows.decode(String.self) { notes.append(note) }
                    return notes
                }
            }
            let logger = TestEnvironment.logger

            let rows = try await database.closingTransaction(scope: nil) { connection in
                try await connection.run(insert("body"), logger: logger)
                return insert("closing")
            }
            #expect(try rows.map { try $0.decode(String.self) } == ["closing"])

            // The closing statement fails: the body's row goes with it, and the error is its own.
            await #expect {
                try await database.closingTransaction(scope: nil) { connection in
                    try await connection.run(insert("body, then a bad statement"), logger: logger)
                    return insert("bad")
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "23514" }
            // The COMMIT fails (the deferred check): nothing is in, and the error is the COMMIT's.
            await #expect {
                try await database.closingTransaction(scope: nil) { connection in
                    try await connection.run(insert("twice"), logger: logger)
                    return insert("twice")
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "23505" }
            // The body fails: rolled back, and the connections (four in the pool) are clean for
            // whatever comes next.
            for round in 0..<8 {
                await #expect(throws: Refused.self) {
                    try await database.closingTransaction(scope: nil) { connection in
                        try await connection.run(insert("body of a refusal \(round)"), logger: logger)
                        throw Refused()
                    }
                }
            }
            #expect(try await notes() == ["body", "closing"])
            let after = try await database.closingTransaction(scope: nil) { _ in insert("after") }
            #expect(after.count == 1)
            #expect(try await notes() == ["after", "body", "closing"])
        }
    }
}
