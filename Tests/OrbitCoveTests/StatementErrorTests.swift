import Foundation
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A statement that fails while it runs fails its transaction, and nothing the transaction
/// wrote stays. `PostgresConnection.query` returns as soon as a statement that yields rows has
/// started; its error comes with the rows, so a body that does not read them never sees it, and
/// the `COMMIT` after it is turned by PostgreSQL into a rollback, which the transaction reports
/// (`TransactionRolledBack`).
@Suite struct StatementErrorTests {
    /// Fails at execution, not while being planned: `random()` is not folded into a constant.
    static let failsWhileRunning: PostgresQuery = "SELECT 1 / (random() * 0)::int"

    /// A reader that gives up on a statement's rows part way (a row it cannot decode) fails its
    /// transaction with its own error, and the connection goes back to the pool: more failures
    /// than the pool has connections, then a statement, each within the pool's bounded wait.
    @Test(.timeLimit(.minutes(1)))
    func aReaderThatStopsPartWayFailsItsTransactionAndFreesTheConnection() async throws {
        struct Unreadable: Error {}
        try await withTestDatabase { database in
            for rows in [3, 200, 20_000, 3, 200, 20_000] {
                await #expect(throws: Unreadable.self) {
                    try await database.transaction(scope: .system) { connection in
                        for try await _ in try await connection.query(
                            "SELECT generate_series(1, \(rows))", logger: TestEnvironment.logger)
                        {
                            throw Unreadable()
                        }
                    }
                }
            }
            let after = try await database.systemQuery("SELECT 1")
            #expect(after.count == 1)
        }
    }

    @Test func aStatementThatFailsWhileRunningFailsItsTransactionAndKeepsNothing() async throws {
        try await withTestDatabase { database throws in
            let queue = "test-statement-error-\(UUID().uuidString.prefix(8).lowercased())"
            let message = MessageEnvelope(
                communityId: nil, actorId: nil,
                data: CommunityCreated(communityId: UUID(), name: "Lost", createdBy: UUID()))
            // Its rows unread, the body does not see the failure; the COMMIT, answered
            // "ROLLBACK", tells the caller that nothing was kept.
            let unseen = message.id
            await #expect(throws: TransactionRolledBack.self) {
                try await database.transaction(scope: .system) { connection in
                    try await Outbox.enqueue(
                        message, toQueueNamed: queue, on: connection, logger: TestEnvironment.logger)
                    try await connection.query(Self.failsWhileRunning, logger: TestEnvironment.logger)
                }
            }
            #expect(try await database.systemQuery("SELECT 1 FROM outbox WHERE id = \(unseen)").isEmpty)
            // Through `run`, the statement's error is the transaction's.
            await #expect(throws: PSQLError.self) {
                try await database.transaction(scope: .system) { connection in
                    try await Outbox.enqueue(
                        message, toQueueNamed: queue, on: connection, logger: TestEnvironment.logger)
                    try await connection.run(Self.failsWhileRunning, logger: TestEnvironment.logger)
                }
            }
            #expect(try await database.systemQuery("SELECT 1 FROM outbox WHERE queue = \(queue)").isEmpty)
        }
    }

    /// A statement that runs past its transaction's bound (`statement_timeout`, 30 s for the
    /// services; a lock held that long, found by a hostile probe) is answered as the database
    /// being briefly unavailable, `503` with `Retry-After`, not as an internal error; work that
    /// is not a request still sees PostgreSQL's error and its code. Shortened here.
    @Test func aStatementPastItsTimeoutIsAnsweredUnavailable() async throws {
        try await withTestDatabase { database in
            let logger = TestEnvironment.logger
            let router = Router(context: AppRequestContext.self)
            router.add(middleware: RequestIdMiddleware(service: "test", trustedProxies: try TrustedProxies([])))
            router.get("slow") { _, _ -> Response in
                try await database.transaction(scope: nil) { connection in
                    try await connection.run("SET LOCAL statement_timeout = '50ms'", logger: logger)
                    try await connection.run("SELECT pg_sleep(1)", logger: logger)
                }
                return Response(status: .ok)
            }
            // A statement that is its own transaction runs under its session's bound (30 s, the
            // services' role's; here shortened by the reads before it, for the rest of the
            // session: this test's pool is its own).
            let user = try await newUser(in: database)
            router.get("slow-committing") { _, _ -> Response in
                _ = try await database.committingStatement(asUser: user) { connection, _ in
                    try await connection.run("SET statement_timeout = '50ms'", logger: logger)
                    return "SELECT pg_sleep(1)"
                }
                return Response(status: .ok)
            }
            try await Application(router: router).test(.router) { client in
                for path in ["/slow", "/slow-committing"] {
                    try await client.execute(uri: path, method: .get) { response in
                        #expect(response.status == .serviceUnavailable, "\(path)")
                        #expect(response.headers[.retryAfter] == "2", "\(path)")
                        #expect(String(buffer: response.body).contains(#""code":"SERVICE_UNAVAILABLE""#), "\(path)")
                    }
                }
            }
            await #expect {
                try await database.transaction(scope: nil) { connection in
                    try await connection.run("SET LOCAL statement_timeout = '50ms'", logger: logger)
                    try await connection.run("SELECT pg_sleep(1)", logger: logger)
                }
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "57014" }
        }
    }

    /// Lets callers on once `expected` of them have arrived.
    actor Meeting {
        let expected: Int
        private var waiting: [CheckedContinuation<Void, Never>] = []

        init(of expected: Int) { self.expected = expected }

        func arrive() async {
            if waiting.count + 1 >= expected {
                for caller in waiting { caller.resume() }
                waiting = []
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }
    }

    /// A transaction PostgreSQL ends to break a deadlock (`40P01`) or because it could not be
    /// serialised with another (`40001`), and a lock not had in time (`55P03`), did nothing
    /// wrong and would pass if tried again: `503` with `Retry-After`, as a statement past its
    /// timeout, not an internal error. One real deadlock of two requests taking two locks in
    /// opposite orders (each takes its second only once both hold their first), and each code
    /// as PostgreSQL raises it.
    @Test(.timeLimit(.minutes(1)))
    func aDeadlockOrASerializationFailureIsAnsweredUnavailable() async throws {
        try await withTestDatabase { database in
            let logger = TestEnvironment.logger
            let router = Router(context: AppRequestContext.self)
            router.add(middleware: RequestIdMiddleware(service: "test", trustedProxies: try TrustedProxies([])))
            let key = Int.random(in: 1...1_000_000_000)
            let meeting = Meeting(of: 2)
            router.get("locks/:first") { _, context -> Response in
                let first = try context.parameters.require("first", as: Int.self)
                try await database.transaction(scope: nil) { connection in
                    try await connection.run("SELECT pg_advisory_xact_lock(\(key + first))", logger: logger)
                    await meeting.arrive()
                    try await connection.run("SELECT pg_advisory_xact_lock(\(key + 1 - first))", logger: logger)
                }
                return Response(status: .ok)
            }
            let raising: [String: PostgresQuery] = [
                "40P01": "DO $$ BEGIN RAISE EXCEPTION 'as PostgreSQL would' USING ERRCODE = '40P01'; END $$",
                "40001": "DO $$ BEGIN RAISE EXCEPTION 'as PostgreSQL would' USING ERRCODE = '40001'; END $$",
                "55P03": "DO $$ BEGIN RAISE EXCEPTION 'as PostgreSQL would' USING ERRCODE = '55P03'; END $$",
                "22012": "DO $$ BEGIN RAISE EXCEPTION 'as PostgreSQL would' USING ERRCODE = '22012'; END $$",
            ]
            router.get("raises/:code") { _, context -> Response in
                let statement = try raising[context.parameters.require("code")] ?? { throw HTTPError(.notFound) }()
                try await database.transaction(scope: nil) { connection in
                    try await connection.run(statement, logger: logger)
                }
                return Response(status: .ok)
            }
            try await Application(router: router).test(.router) { client in
                func expectUnavailable(_ response: TestResponse, _ path: String) {
                    #expect(response.status == .serviceUnavailable, "\(path)")
                    #expect(response.headers[.retryAfter] == "2", "\(path)")
                    #expect(String(buffer: response.body).contains(#""code":"SERVICE_UNAVAILABLE""#), "\(path)")
                }
                async let one = client.execute(uri: "/locks/0", method: .get)
                async let other = client.execute(uri: "/locks/1", method: .get)
                let answers = try await [one, other]
                #expect(Set(answers.map(\.status)) == [.ok, .serviceUnavailable])
                for answer in answers where answer.status != .ok { expectUnavailable(answer, "/locks") }
                for code in ["40P01", "40001", "55P03"] {
                    expectUnavailable(try await client.execute(uri: "/raises/\(code)", method: .get), code)
                }
                // Any other failure is still the service's own.
                let division = try await client.execute(uri: "/raises/22012", method: .get)
                #expect(division.status == .internalServerError)
            }
        }
    }
}
