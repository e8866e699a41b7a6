import Foundation
import OrbitCoveInfra
import PostgresNIO
import Synchronization
import Testing

/// A caller waits a bounded time for a pooled connection (`connectionWait`), then gets the
/// `503` a client retries; the wait leaves the pool as it was, and once a connection is handed
/// over the deadline no longer applies: a statement longer than the wait runs to its end.
@Suite struct ConnectionWaitTests {
    @Test func aCallerWaitsBoundedlyForTheOnlyConnectionAndThePoolRecovers() async throws {
        let database = try Database(
            url: TestEnvironment.databaseURL, maxConnections: 1, connectionWait: .milliseconds(300),
            logger: TestEnvironment.logger)
        try await withServices([database.service()]) {
            // The one connection opened first: on a busy machine opening it can take longer
            // than the wait, which is not what is measured here.
            for _ in 0..<100 {
                if (try? await database.systemQuery("SELECT 1")) != nil { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            // A statement longer than the wait, once leased, finishes.
            let slept = try await database.systemQuery("SELECT 7 FROM pg_sleep(0.6)")
            #expect(try slept.first?.decode(Int.self) == 7)

            let heldThroughout = try await Self.whileHeld(database, seconds: 10) {
                for _ in 0..<3 {
                    await #expect(throws: APIError.self) { try await database.systemQuery("SELECT 1") }
                }
            }
            // Each gave up long before the holder let go.
            #expect(heldThroughout)
            // The abandoned leases left nothing behind: the connection serves the next caller.
            let after = try await database.systemQuery("SELECT 42")
            #expect(try after.first?.decode(Int.self) == 42)
        }
    }

    /// A caller whose task is cancelled while it waits stops waiting at once, long before its
    /// deadline, and hears `CancellationError`, not "busy": the breaker learns nothing from it.
    @Test func aCancelledCallerStopsWaitingAtOnce() async throws {
        let database = try Database(
            url: TestEnvironment.databaseURL, maxConnections: 1, connectionWait: .seconds(60),
            logger: TestEnvironment.logger)
        try await withServices([database.service()]) {
            _ = try await database.systemQuery("SELECT 1")
            var outcome: Result<[PostgresRow], any Error>?
            let heldThroughout = try await Self.whileHeld(database, seconds: 10) {
                let waiting = Task { try await database.systemQuery("SELECT 1") }
                try await Task.sleep(for: .milliseconds(100))
                waiting.cancel()
                outcome = await waiting.result
            }
            // Ended while the connection was still held: not by getting it, nor by the deadline.
            #expect(heldThroughout)
            switch outcome {
            case .failure(let error): #expect(error is CancellationError, "a cancelled caller was told \(error)")
            case .success, nil: Issue.record("a cancelled caller got a connection")
            }
            let after = try await database.systemQuery("SELECT 42")
            #expect(try after.first?.decode(Int.self) == 42)
        }
    }
}

extension ConnectionWaitTests {
    /// Runs `body` while another task holds `database`'s only connection, until `body` ends
    /// or `seconds` pass, whichever is first; whether it still held it when `body` ended.
    static func whileHeld(
        _ database: Database, seconds: Int, _ body: () async throws -> Void
    ) async throws -> Bool {
        let holding = Flag()
        let released = Flag()
        let done = Flag()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await database.withConnection { _ in
                    holding.set()
                    let deadline = ContinuousClock.now + .seconds(seconds)
                    while !done.isSet, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                    released.set()
                }
            }
            while !holding.isSet { try await Task.sleep(for: .milliseconds(10)) }
            try await body()
            let heldThroughout = !released.isSet
            done.set()
            try await group.waitForAll()
            return heldThroughout
        }
    }
}

private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}
