import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization
import Testing

/// The relays are woken by their own process's commits (no NOTIFY, migration 0026): a
/// transaction that wrote a message wakes them once it ends, one that wrote none does not.
@Suite struct OutboxWakeupTests {
    @Test func aTransactionThatWroteAMessageWakesTheRelaysAndOneThatDidNotStaysQuiet() async throws {
        try await withTestDatabase { database in
            let wakeups = database.outboxWakeups.stream()
            let woken = Atomic<Int>(0)
            let listener = Task {
                for await _ in wakeups { woken.add(1, ordering: .relaxed) }
            }
            defer { listener.cancel() }
            // A transaction without a message wakes nobody (the wake-up is sent as the
            // transaction returns; the listener takes it within milliseconds).
            try await database.transaction(scope: .system) { connection in
                try await connection.query("SELECT count(*) FROM outbox", logger: TestEnvironment.logger)
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(woken.load(ordering: .relaxed) == 0, "woken by a transaction that wrote no message")
            let queue = "test-wakeup-\(UUID().uuidString.prefix(8).lowercased())"
            let id = try await database.transaction(scope: .system) { connection in
                try await Outbox.enqueue(
                    MessageEnvelope(
                        communityId: nil, actorId: nil,
                        data: CommunityCreated(communityId: UUID(), name: "Wake-up", createdBy: UUID())),
                    toQueueNamed: queue, on: connection, logger: TestEnvironment.logger)
            }
            let wokenOnce = try await eventually(timeout: .seconds(5), every: .milliseconds(5)) {
                woken.load(ordering: .relaxed) >= 1
            }
            #expect(wokenOnce)
            // The row goes to a queue nobody declared: take it out again if no relay has yet.
            try await database.systemQuery("DELETE FROM outbox WHERE id = \(id)")
        }
    }
}
