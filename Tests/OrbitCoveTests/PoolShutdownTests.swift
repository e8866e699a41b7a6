import Foundation
import OrbitCoveInfra
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// The pool stops after the work in flight, however its service group is stopped. PostgresNIO's
/// pool, told to stop, closes its connections under the statements running on them, and the
/// next statement sent on a closed connection is never answered: a transaction's next
/// statement, or its `ROLLBACK`, waited for ever, and so did the service's shutdown (a core
/// whose test failed right after a write hung instead of failing).
@Suite struct PoolShutdownTests {
    enum Stop: CaseIterable {
        /// In its turn, after the parts that use it.
        case gracefully
        /// As when another part of the group fails: every part at once.
        case byCancellation
        /// As a test harness does when its body throws.
        case both
    }

    @Test(arguments: Stop.allCases) func aTransactionUnderWayFinishesBeforeThePoolStops(stop: Stop) async throws {
        try await Self.stopWhileATransactionRuns(stop)
    }

    /// A call still running when the drain's bound passes has its connection closed under it,
    /// and ends with the `503` a client retries instead of waiting for ever.
    @Test func aCallPastTheDrainsBoundEndsWith503() async throws {
        let (database, group, stopped, _) = try Self.runningPool(drainTimeout: .seconds(1))
        let begun = AtomicFlag()
        let call = Unawaited.start {
            try await database.transaction(scope: .system) { connection in
                begun.set()
                try await connection.run("SELECT pg_sleep(30)", logger: TestEnvironment.logger)
                try await connection.run("SELECT 1", logger: TestEnvironment.logger)
            }
        }
        #expect(try await eventually { begun.isSet })
        let stopping = ContinuousClock.now
        await group.triggerGracefulShutdown()
        #expect(try await eventually(timeout: .seconds(20)) { stopped.isSet }, "the pool's service never stopped")
        // Waiting for the statement would take its thirty seconds; the drain's bound is one, and
        // the rest is room for a loaded machine (a whole test run measured 5.2 s here).
        #expect(ContinuousClock.now - stopping < .seconds(10), "the service waited past the drain's bound")
        #expect(try await eventually(timeout: .seconds(5)) { call.value != nil }, "the call never ended")
        switch call.value {
        case .failure(let error as APIError): #expect(error.status == .serviceUnavailable)
        case .failure(let error): Issue.record("the call ended with \(String(reflecting: error))")
        case .success: Issue.record("a statement cut off by the pool's stop succeeded")
        case nil: break
        }
    }

    /// A database whose pool runs alone in a service group, in a task of its own; the flag is
    /// set once the group has stopped.
    private static func runningPool(
        drainTimeout: Duration = .seconds(35)
    ) throws -> (Database, ServiceGroup, AtomicFlag, Task<Void, Never>) {
        let database = try Database(
            url: TestEnvironment.databaseURL, maxConnections: 2, connectionWait: .seconds(15),
            logger: TestEnvironment.logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: database.service(drainTimeout: drainTimeout))],
                logger: TestEnvironment.logger))
        let stopped = AtomicFlag()
        let running = Task {
            try? await group.run()
            stopped.set()
        }
        return (database, group, stopped, running)
    }

    private static func stopWhileATransactionRuns(_ stop: Stop) async throws {
        let (database, group, stopped, running) = try Self.runningPool()
        let begun = AtomicFlag()
        let answer = Unawaited.start {
            try await database.transaction(scope: .system) { connection in
                begun.set()
                try await connection.run("SELECT pg_sleep(0.5)", logger: TestEnvironment.logger)
                return try await connection.query("SELECT 42", logger: TestEnvironment.logger)
                    .collect().first?.decode(Int.self)
            }
        }
        #expect(try await eventually { begun.isSet })
        try await Task.sleep(for: .milliseconds(100))  // The sleep is under way.
        if stop != .byCancellation { await group.triggerGracefulShutdown() }
        if stop != .gracefully { running.cancel() }

        // Not awaited: a task that never ends would hang the test instead of failing it.
        #expect(try await eventually(timeout: .seconds(20)) { stopped.isSet }, "the pool's service never stopped")
        #expect(try await eventually(timeout: .seconds(5)) { answer.value != nil })
        switch answer.value {
        case .success(let value): #expect(value == 42)
        case .failure(let error): Issue.record("the transaction under way failed: \(String(reflecting: error))")
        case nil: Issue.record("the transaction under way never ended")
        }

        // Once stopped, a call is refused at once, as a busy database is.
        let late = Unawaited.start { try await database.systemQuery("SELECT 1").count }
        #expect(try await eventually(timeout: .seconds(5)) { late.value != nil })
        if case .success = late.value { Issue.record("a call after the pool stopped was answered") }
    }

    /// The case that found it: a test whose body fails right after writes that queued
    /// messages, so that core stops while its relay is claiming them. Before the fix one to
    /// three of these six hung in every run.
    @Test(.serialized, arguments: 1...6) func aCoreStoppedRightAfterItsWritesStops(run: Int) async throws {
        struct BodyFailed: Error {}
        let ended = Unawaited.start {
            try await CoreHarness.run { api in
                let coach = try await api.signIn("Coach")
                let ada = try await api.signIn("Ada")
                let club = try await api.club(of: coach, with: [ada])
                let events = "/api/v1/communities/\(club.id)/events"
                let league = try await api.createEvent(
                    in: club, by: coach,
                    #"{"title":"League","startsAt":"2031-04-01T18:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=2"}"#)
                try await api.call(
                    .post, "\(events)/\(league.id)/rsvp", as: ada,
                    json: #"{"status":"maybe","recurrenceId":"2031-04-01T18:00:00Z"}"#)
                try await api.call(
                    .patch, "\(events)/\(league.id)?recurrenceId=2031-04-01T18:00:00Z", as: coach,
                    json: #"{"startsAt":"2031-06-04T18:00:00Z"}"#)
                throw BodyFailed()
            }
        }
        #expect(try await eventually(timeout: .seconds(30)) { ended.value != nil }, "core never stopped")
        if case .failure(let error) = ended.value { #expect(error is BodyFailed) }
    }
}
