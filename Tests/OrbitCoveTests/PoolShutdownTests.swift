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
    @Test func aTransactionUnderWayFinishesBeforeThePoolStops() async throws {
        try await Self.stopWhileATransactionRuns(cancellingTheGroup: false)
    }

    /// As when a service fails, or a test harness both shuts its group down and cancels it.
    @Test func aTransactionUnderWayFinishesWhenTheGroupIsAlsoCancelled() async throws {
        try await Self.stopWhileATransactionRuns(cancellingTheGroup: true)
    }

    private static func stopWhileATransactionRuns(cancellingTheGroup: Bool) async throws {
        let database = try Database(
            url: TestEnvironment.databaseURL, maxConnections: 2, connectionWait: .seconds(15),
            logger: TestEnvironment.logger)
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: database.service())], logger: TestEnvironment.logger))
        let stopped = AtomicFlag()
        let running = Task {
            try? await group.run()
            stopped.set()
        }
        let begun = AtomicFlag()
        let answer = Unawaited {
            try await database.transaction(scope: .system) { connection in
                begun.set()
                try await connection.run("SELECT pg_sleep(0.5)", logger: TestEnvironment.logger)
                return try await connection.query("SELECT 42", logger: TestEnvironment.logger)
                    .collect().first?.decode(Int.self)
            }
        }
        #expect(try await eventually { begun.isSet })
        try await Task.sleep(for: .milliseconds(100))  // The sleep is under way.
        await group.triggerGracefulShutdown()
        if cancellingTheGroup { running.cancel() }

        // Not awaited: a task that never ends would hang the test instead of failing it.
        #expect(try await eventually(timeout: .seconds(20)) { stopped.isSet }, "the pool's service never stopped")
        #expect(try await eventually(timeout: .seconds(5)) { answer.value != nil })
        switch answer.value {
        case .success(let value): #expect(value == 42)
        case .failure(let error): Issue.record("the transaction under way failed: \(String(reflecting: error))")
        case nil: Issue.record("the transaction under way never ended")
        }

        // Once stopped, a call is refused at once, as a busy database is.
        let late = Unawaited { try await database.systemQuery("SELECT 1").count }
        #expect(try await eventually(timeout: .seconds(5)) { late.value != nil })
        if case .success = late.value { Issue.record("a call after the pool stopped was answered") }
    }

    /// The case that found it: a test whose body fails right after writes that queued
    /// messages, so that core stops while its relay is claiming them. Before the fix one to
    /// three of these six hung in every run.
    @Test(.serialized, arguments: 1...6) func aCoreStoppedRightAfterItsWritesStops(run: Int) async throws {
        struct BodyFailed: Error {}
        let ended = Unawaited {
            try await CoreHarness.run { api in
                let coach = try await api.signIn("Coach")
                let ada = try await api.signIn("Ada")
                let club = try await api.community(by: coach)
                try await api.join(ada, club, invitedBy: coach)
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
