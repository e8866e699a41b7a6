import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// A transaction whose connection PostgreSQL closed between two of its statements (a restart,
/// a failover, `pg_terminate_backend`) ends at once with the `503` a client retries. PostgresNIO
/// never answers a statement sent on a connection that is already closed: the request hung for
/// ever, and its call held up the service's shutdown for the whole drain.
@Suite struct ConnectionLossTests {
    enum Next: CaseIterable {
        /// A statement whose rows are read.
        case query
        /// A statement run for its effect (`connection.run`).
        case run
        /// A prepared statement.
        case prepared
        /// None: the body returns and the `COMMIT` is next.
        case commit
        /// The body fails, and the `ROLLBACK` is next.
        case rollback
    }

    struct BodyFailed: Error {}

    struct SelectTwo: PreparedRows {
        static let sql = "SELECT 2"
        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
    }

    @Test(arguments: Next.allCases)
    func aConnectionClosedBetweenStatementsEndsTheTransactionAtOnce(next: Next) async throws {
        try await withTestDatabase { database throws in
            let ended = Unawaited.start {
                try await database.transaction(scope: .system) { connection in
                    try await Self.closedByTheServer(connection, database: database)
                    switch next {
                    case .query:
                        _ = try await connection.query("SELECT 2", logger: TestEnvironment.logger).collect()
                    case .run:
                        try await connection.run("SELECT 2", logger: TestEnvironment.logger)
                    case .prepared:
                        for try await _ in try await connection.query(SelectTwo(), logger: TestEnvironment.logger) {}
                    case .commit:
                        break
                    case .rollback:
                        throw BodyFailed()
                    }
                }
            }
            #expect(try await eventually(timeout: .seconds(5)) { ended.value != nil }, "the transaction never ended")
            switch ended.value {
            case .failure(let error as APIError): #expect(error.status == .serviceUnavailable)
            case .failure(let error): #expect(next == .rollback && error is BodyFailed, "\(error)")
            case .success: Issue.record("a transaction on a closed connection succeeded")
            case nil: break
            }
            // The pool replaced the connection.
            let after = try await database.systemQuery("SELECT 42")
            #expect(try after.first?.decode(Int.self) == 42)
        }
    }

    /// Has PostgreSQL end `connection`'s backend, and waits until this side has seen it close.
    private static func closedByTheServer(_ connection: PostgresConnection, database: Database) async throws {
        let pid = try await connection.query("SELECT pg_backend_pid()", logger: TestEnvironment.logger)
            .collect().first?.decode(Int32.self)
        try await database.withConnection { other in
            try await other.run("SELECT pg_terminate_backend(\(pid))", logger: TestEnvironment.logger)
        }
        #expect(try await eventually(timeout: .seconds(5)) { connection.isClosed })
    }
}
