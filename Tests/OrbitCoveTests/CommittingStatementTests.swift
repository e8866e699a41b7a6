import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// `Database.committingStatement`: the reads in a read-only transaction of their own, then the
/// write as one statement that PostgreSQL commits as it ends, entered as the user and marking the
/// request's Idempotency-Key itself. It commits whole or not at all, whichever part fails: the
/// reads, the statement, or its commit. Real database, a table and a function of the test's own,
/// shaped as an answer's (`calendar_answer_committing`).
@Suite struct CommittingStatementTests {
    struct Refused: Error {}

    /// Makes `name(person, key_owner, idempotency_key, key_claim, content)`: enters as `person`,
    /// marks the key when given one, then runs `write` (which may use `content`) and returns its
    /// one text column as `written`, and whether it marked the key as `key_marked`.
    static func makeFunction(_ name: String, write: String) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            _ = try await owner.systemQuery(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE FUNCTION \(name)(person uuid, key_owner uuid, idempotency_key text, key_claim uuid,
                                                content text)
                        RETURNS TABLE (written text, key_marked boolean) LANGUAGE plpgsql AS $$
                        DECLARE
                            marked boolean := false;
                        BEGIN
                            PERFORM app_enter_as_user(person);
                            IF idempotency_key IS NOT NULL THEN
                                PERFORM pg_current_xact_id();
                                marked := app_idempotency_applied(key_owner, idempotency_key, key_claim);
                            END IF;
                            RETURN QUERY WITH w AS (\(write)) SELECT w.*, marked FROM w;
                        END $$
                        """))
        }
    }

    /// The statement that runs `function` as `user`, marking `mark` if there is one.
    static func call(_ function: String, as user: UUID, mark: Database.KeyMark?, content: String) -> PostgresQuery {
        """
        SELECT written, key_marked
        FROM \(unescaped: function)(\(user), \(mark?.owner), \(mark?.key), \(mark?.claim), \(content))
        """
    }

    static func marked(_ row: PostgresRow) throws -> Bool {
        try row.makeRandomAccess()[Database.keyMarkedColumn].decode(Bool.self)
    }

    @Test func theReadsAndTheStatementCommitAsOneWriteOrNotAtAll() async throws {
        let table = "committing_\(UUID().uuidString.prefix(8).lowercased())"
        // Checked at once: 'bad' fails the statement. Unique at the commit: a duplicate fails it.
        // `entered_as`: whom the statement ran as.
        try await MessageBatchTests.owner(
            """
            CREATE TABLE \(table) (note text NOT NULL CHECK (note <> 'bad') UNIQUE DEFERRABLE INITIALLY DEFERRED,
                                   entered_as text DEFAULT current_setting('app.current_user_id', true));
            GRANT SELECT, INSERT ON \(table) TO orbitcove_app
            """)
        let function = "\(table)_write"
        try await Self.makeFunction(function, write: "INSERT INTO \(table) (note) VALUES (content) RETURNING note")
        defer {
            Task {
                try? await MessageBatchTests.owner("DROP FUNCTION \(function); DROP TABLE \(table)")
            }
        }
        let logger = TestEnvironment.logger
        try await withTestDatabase { database in
            let user = try await newUser(in: database)
            func notes() async throws -> [String] {
                try await database.transaction { connection in
                    let rows = try await connection.query(
                        "SELECT note || ' as ' || entered_as FROM \(unescaped: table) ORDER BY note", logger: logger)
                    var notes: [String] = []
                    for try await note in rows.decode(String.self) { notes.append(note) }
                    return notes
                }
            }
            func write(_ note: String) -> PostgresQuery { Self.call(function, as: user, mark: nil, content: note) }

            // The reads run as the user; the statement enters as the user itself.
            let rows = try await database.committingStatement(asUser: user) { connection, mark in
                #expect(mark == nil)
                let entered = try await connection.query(
                    "SELECT current_setting('app.current_user_id')", logger: logger
                ).collect()
                #expect(try entered.first?.decode(String.self) == user.uuidString.lowercased())
                return write("first")
            }
            #expect(try rows.map { try $0.makeRandomAccess()["written"].decode(String.self) } == ["first"])

            // The reads cannot write: what they wrote would not go with the statement.
            await #expect {
                try await database.committingStatement(asUser: user) { connection, _ in
                    try await connection.run(
                        "INSERT INTO \(unescaped: table) (note) VALUES ('written by the reads')", logger: logger)
                    return write("after a write in the reads")
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "25006" }
            // The statement fails: nothing of it is in, and the error is its own.
            await #expect {
                try await database.committingStatement(asUser: user) { _, _ in
                    write("bad")
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "23514" }
            // The reads fail: nothing runs, and the connections (four in the pool) are clean for
            // whatever comes next: each, held at once, is not in the reads' read-only transaction,
            // and is nobody.
            for round in 0..<8 {
                await #expect(throws: Refused.self) {
                    try await database.committingStatement(asUser: user) { connection, _ in
                        try await connection.run("SELECT \(round)", logger: logger)
                        throw Refused()
                    }
                }
            }
            let meeting = StatementErrorTests.Meeting(of: 4)
            let states = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await database.withConnection { connection in
                            await meeting.arrive()
                            let rows = try await connection.query(
                                """
                                SELECT current_setting('transaction_read_only') || ' '
                                       || coalesce(nullif(current_setting('app.current_user_id', true), ''), 'nobody')
                                """, logger: logger
                            ).collect()
                            return try rows.first?.decode(String.self) ?? ""
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(states == Array(repeating: "off nobody", count: 4))
            let me = user.uuidString.lowercased()
            #expect(try await notes() == ["first as \(me)"])
            let after = try await database.committingStatement(asUser: user) { _, _ in
                write("after")
            }
            #expect(after.count == 1)
            #expect(try await notes() == ["after as \(me)", "first as \(me)"])

            // Its commit fails (the deferred check): nothing is in, and the request hears that the
            // database could not take it, to try again (PostgresNIO, given the commit's error where
            // it expects none, closes the connection). An answer has no check deferred to its
            // commit.
            await #expect {
                try await database.committingStatement(asUser: user) { _, _ in
                    """
                    SELECT written, key_marked FROM \(unescaped: function)(\(user), NULL, NULL, NULL, 'twice')
                    UNION ALL
                    SELECT written, key_marked FROM \(unescaped: function)(\(user), NULL, NULL, NULL, 'twice')
                    """
                }
            } throws: { ($0 as? APIError)?.code == "SERVICE_UNAVAILABLE" }
        }
        // Read through another pool: this one may still hand out the connection being closed.
        try await withTestDatabase { database in
            let rows = try await database.transaction { connection in
                try await connection.query("SELECT count(*)::int FROM \(unescaped: table)", logger: logger).collect()
            }
            #expect(try rows.first?.decode(Int.self) == 2)
        }
    }

    /// Every statement of the services is bounded, a statement that is its own transaction too:
    /// the services' role has `statement_timeout` (30 s; scripts/stack.sh and
    /// deploy/postgres/init-roles.sh), which every transaction also sets for itself.
    @Test func aStatementOutsideATransactionIsBounded() async throws {
        try await withTestDatabase { database in
            let rows = try await database.withConnection { connection in
                try await connection.query("SHOW statement_timeout", logger: TestEnvironment.logger).collect()
            }
            #expect(try rows.first?.decode(String.self) == "30s")
        }
    }
}
