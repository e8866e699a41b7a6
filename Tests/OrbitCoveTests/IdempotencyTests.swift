import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Synchronization
import Testing

@testable import OrbitCoveInfra

/// `IdempotencyMiddleware` never lets a request's writes happen twice, whatever fails after
/// they committed (found by a review: a server error after the commit, or a response the
/// database could not keep, let a retry write again). Against the real PostgreSQL, through a
/// router of routes that write an "effect" row (a key row of the caller's own, as good as any)
/// and then answer or fail as the test asks.
@Suite struct IdempotencyTests {
    /// Blocks the first request that passes until the test opens it.
    actor Gate {
        private var armed = false
        private var waiting: CheckedContinuation<Void, Never>?
        private var arrived: CheckedContinuation<Void, Never>?

        func arm() { armed = true }

        /// The request's side: waits here while armed (once).
        func pass() async {
            guard armed else { return }
            armed = false
            arrived?.resume()
            arrived = nil
            await withCheckedContinuation { waiting = $0 }
        }

        /// The test's side: until a request waits at the gate.
        func untilArrived() async {
            if waiting != nil { return }
            await withCheckedContinuation { arrived = $0 }
        }

        func open() {
            waiting?.resume()
            waiting = nil
        }
    }

    static func router(_ database: Database, gate: Gate) -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: TestUser())
        router.add(middleware: IdempotencyMiddleware(database: database, logger: TestEnvironment.logger))
        @Sendable func effect(_ context: AppRequestContext) async throws {
            try await database.transaction(userId: context.userId) { connection in
                try await connection.run(
                    """
                    INSERT INTO idempotency_keys (user_id, key, request_hash)
                    VALUES (\(context.userId), 'effect-' || gen_random_uuid(), repeat('0', 64))
                    """, logger: TestEnvironment.logger)
                await gate.pass()
            }
        }
        router.post("write") { _, context in
            try await effect(context)
            return Response(status: .created)
        }
        router.post("write-then-fail") { _, context -> Response in
            try await effect(context)
            throw APIError(.serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: "after the commit")
        }
        // The same through a write that is one statement committing as it ends
        // (`committingStatement`, as an answer is made): the statement marks the key itself.
        router.post("commit-then-fail") { _, context -> Response in
            let user = try #require(context.userId)
            let rows = try await database.committingStatement(asUser: user) { _, mark in
                #expect(mark?.owner == user)
                return CommittingStatementTests.call(committingEffect, as: user, mark: mark, content: "")
            }
            #expect(try rows.map(CommittingStatementTests.marked) == [true])
            throw APIError(.serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: "after the commit")
        }
        // A commit whose acknowledgement never came back: the key is marked in the database,
        // but the request does not know it committed.
        router.post("write-unacknowledged") { _, context -> Response in
            let claim = try #require(IdempotencyClaim.current)
            try await IdempotencyClaim.$current.withValue(nil) {
                try await database.transaction(userId: context.userId) { connection in
                    try await connection.run(
                        """
                        INSERT INTO idempotency_keys (user_id, key, request_hash)
                        VALUES (\(context.userId), 'effect-' || gen_random_uuid(), repeat('0', 64))
                        """, logger: TestEnvironment.logger)
                    _ = try await claim.mark(on: connection, logger: TestEnvironment.logger)
                }
            }
            throw APIError(.serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: "the commit was not acknowledged")
        }
        // Refused once, with "try again", writing nothing (an answer the event's edits kept
        // overtaking: `409 EVENT_CHANGING`); made the second time.
        let refusals = RefusedOnce()
        router.post("refused-once") { _, context -> Response in
            if refusals.first() {
                throw APIError(
                    .conflict, code: "EVENT_CHANGING", message: "try again", headers: [.retryAfter: "1"])
            }
            try await effect(context)
            return Response(status: .created)
        }
        router.post("read-then-fail") { _, context -> Response in
            try await database.transaction(userId: context.userId) { connection in
                try await connection.run("SELECT 1", logger: TestEnvironment.logger)
            }
            throw APIError(.serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: "nothing written")
        }
        return router
    }

    /// The function `/commit-then-fail` writes its effect through, shaped as an answer's
    /// (`CommittingStatementTests.makeFunction`).
    static let committingEffect = "idempotency_effect_\(UUID().uuidString.prefix(8).lowercased())"

    static func effects(of user: UUID, _ database: Database) async throws -> Int {
        try await database.transaction(userId: user) { connection in
            var count = 0
            for try await value in try await connection.query(
                "SELECT count(*)::int FROM idempotency_keys WHERE user_id = \(user) AND key LIKE 'effect-%'",
                logger: TestEnvironment.logger
            ).decode(Int.self) {
                count = value
            }
            return count
        }
    }

    static func post(
        _ client: some TestClientProtocol, _ path: String, user: UUID, key: String
    ) async throws -> (HTTPResponse.Status, String?) {
        try await client.execute(
            uri: path, method: .post, headers: [TestUser.header: user.uuidString, .idempotencyKey: key]
        ) { response in
            let json = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
            return (response.status, (json?["error"] as? [String: Any])?["code"] as? String)
        }
    }

    @Test func aServerErrorAfterTheWritesCommittedIsNotRunAgain() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            try await Application(router: Self.router(database, gate: Gate())).test(.router) { client in
                let first = try await Self.post(client, "/write-then-fail", user: user, key: key)
                #expect(first.0 == .serviceUnavailable)
                let retry = try await Self.post(client, "/write-then-fail", user: user, key: key)
                #expect(retry.0 == .conflict && retry.1 == "IDEMPOTENCY_RESPONSE_LOST", "\(retry)")
                #expect(try await Self.effects(of: user, database) == 1)

                try await CommittingStatementTests.makeFunction(
                    Self.committingEffect,
                    write: """
                        INSERT INTO idempotency_keys (user_id, key, request_hash)
                        VALUES (person, 'effect-' || gen_random_uuid() || content, repeat('0', 64)) RETURNING key::text
                        """)
                defer { Task { try? await MessageBatchTests.owner("DROP FUNCTION \(Self.committingEffect)") } }
                let committingKey = UUID().uuidString
                #expect(
                    try await Self.post(client, "/commit-then-fail", user: user, key: committingKey).0
                        == .serviceUnavailable)
                let committingRetry = try await Self.post(client, "/commit-then-fail", user: user, key: committingKey)
                #expect(
                    committingRetry.0 == .conflict && committingRetry.1 == "IDEMPOTENCY_RESPONSE_LOST",
                    "\(committingRetry)")
                #expect(try await Self.effects(of: user, database) == 2)

                // One that wrote nothing is run again, as before.
                let readKey = UUID().uuidString
                #expect(
                    try await Self.post(client, "/read-then-fail", user: user, key: readKey).0 == .serviceUnavailable)
                #expect(
                    try await Self.post(client, "/read-then-fail", user: user, key: readKey).1 == "SERVICE_UNAVAILABLE")
            }
        }
    }

    final class RefusedOnce: Sendable {
        private let refused = Atomic<Bool>(false)
        /// True the first time only.
        func first() -> Bool { !refused.exchange(true, ordering: .relaxed) }
    }

    /// A refusal that says to try again (`Retry-After`) and wrote nothing is not kept: the
    /// retry with the same key is made. A review's: `409 EVENT_CHANGING` was kept and replayed
    /// for a day to the retry its own message asks for.
    @Test func aRefusalThatSaysTryAgainIsNotKept() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            try await Application(router: Self.router(database, gate: Gate())).test(.router) { client in
                let first = try await Self.post(client, "/refused-once", user: user, key: key)
                #expect(first.0 == .conflict && first.1 == "EVENT_CHANGING")
                let retry = try await Self.post(client, "/refused-once", user: user, key: key)
                #expect(retry.0 == .created, "\(retry)")
                #expect(try await Self.effects(of: user, database) == 1)
            }
        }
    }

    @Test func aCommitWhoseAcknowledgementWasLostIsNotRunAgain() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            try await Application(router: Self.router(database, gate: Gate())).test(.router) { client in
                #expect(
                    try await Self.post(client, "/write-unacknowledged", user: user, key: key).0 == .serviceUnavailable)
                let retry = try await Self.post(client, "/write-unacknowledged", user: user, key: key)
                #expect(retry.0 == .conflict && retry.1 == "IDEMPOTENCY_RESPONSE_LOST", "\(retry)")
                #expect(try await Self.effects(of: user, database) == 1)
            }
        }
    }

    @Test func anAbandonedKeyWhoseWritesCommittedIsNotTakenOver() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            try await Application(router: Self.router(database, gate: Gate())).test(.router) { client in
                #expect(try await Self.post(client, "/write", user: user, key: key).0 == .created)
                // As if its process died after the commit, before the response was kept.
                try await database.transaction(userId: user) { connection in
                    try await connection.run(
                        """
                        UPDATE idempotency_keys SET status_code = NULL, completed_at = NULL,
                            created_at = NOW() - INTERVAL '3 minutes'
                        WHERE user_id = \(user) AND key = \(key)
                        """, logger: TestEnvironment.logger)
                }
                let retry = try await Self.post(client, "/write", user: user, key: key)
                #expect(retry.0 == .conflict && retry.1 == "IDEMPOTENCY_RESPONSE_LOST", "\(retry)")
                #expect(try await Self.effects(of: user, database) == 1)
            }
        }
    }

    /// Runs a first `/write` that waits, having written, before its commit; runs `meanwhile`
    /// with the key's SQL to run as the owner and the client; lets the first go and returns
    /// its answer.
    static func whileTheFirstWaits(
        _ database: Database, user: UUID, key: String, keySQL: PostgresQuery,
        meanwhile: @escaping @Sendable (any TestClientProtocol) async throws -> Void = { _ in }
    ) async throws -> (HTTPResponse.Status, String?) {
        let gate = Gate()
        await gate.arm()
        return try await Application(router: Self.router(database, gate: gate)).test(.router) { client in
            async let first = Self.post(client, "/write", user: user, key: key)
            await gate.untilArrived()
            try await database.transaction(userId: user) { connection in
                try await connection.run(keySQL, logger: TestEnvironment.logger)
            }
            try await meanwhile(client)
            await gate.open()
            return try await first
        }
    }

    @Test func aHolderWhoseKeyWasTakenOverCannotCommitBesideTheRetry() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            // The first request wrote and waits before its commit; it is taken for dead.
            let old: PostgresQuery = """
                UPDATE idempotency_keys SET created_at = NOW() - INTERVAL '3 minutes'
                WHERE user_id = \(user) AND key = \(key)
                """
            let first = try await Self.whileTheFirstWaits(database, user: user, key: key, keySQL: old) { client in
                let retry = try await Self.post(client, "/write", user: user, key: key)
                #expect(retry.0 == .created)
            }
            #expect(first.0 == .conflict && first.1 == "IDEMPOTENCY_IN_PROGRESS", "\(first)")
            #expect(try await Self.effects(of: user, database) == 1)
            // And the key keeps the retry's answer.
            try await Application(router: Self.router(database, gate: Gate())).test(.router) { client in
                let replayed = try await Self.post(client, "/write", user: user, key: key)
                #expect(replayed.0 == .created)
            }
            #expect(try await Self.effects(of: user, database) == 1)
        }
    }

    /// A key that is gone (released by its request, or expired) refuses nothing: work that
    /// still carries the request's claim commits.
    @Test func aKeyThatIsGoneRefusesNothing() async throws {
        try await withTestDatabase { database in
            let (user, key) = (try await newUser(in: database), UUID().uuidString)
            let gone: PostgresQuery = "DELETE FROM idempotency_keys WHERE user_id = \(user) AND key = \(key)"
            let first = try await Self.whileTheFirstWaits(database, user: user, key: key, keySQL: gone)
            #expect(first.0 == .created)
            #expect(try await Self.effects(of: user, database) == 1)
        }
    }
}

/// The caller, as the authentication middleware would have it: from `X-Test-User`.
private struct TestUser: RouterMiddleware {
    typealias Context = AppRequestContext
    // swift-format-ignore: NeverForceUnwrap
    // A valid header token.
    static let header = HTTPField.Name("X-Test-User")!

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.userId = request.headers[Self.header].flatMap(UUID.init(uuidString:))
        return try await next(request, context)
    }
}
