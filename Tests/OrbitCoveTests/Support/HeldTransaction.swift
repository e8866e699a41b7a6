import OrbitCoveInfra
import PostgresNIO
import Synchronization
import Testing

/// A transaction of the schema owner's that runs a statement and holds what it took until
/// released: a race test starts a request, waits until that request waits on the holder (the
/// only other session, so any waiter on its transaction id), changes the world, then releases.
final class HeldTransaction: Sendable {
    let id: String
    private let owner: Database
    private let release: AtomicFlag
    private let task: Task<Void, any Error>

    private init(id: String, owner: Database, release: AtomicFlag, task: Task<Void, any Error>) {
        (self.id, self.owner, self.release, self.task) = (id, owner, release, task)
    }

    /// Runs `statement` in a transaction as the system and holds it; `rollBack` ends it without
    /// committing what it wrote.
    static func start(
        _ statement: PostgresQuery, on owner: Database, rollBack: Bool = false
    ) async throws
        -> HeldTransaction
    {
        let release = AtomicFlag()
        let holderId = Mutex<String?>(nil)
        let task = Task {
            try await owner.transaction(scope: .system) { connection in
                try await connection.run(statement, logger: TestEnvironment.logger)
                for try await id in try await connection.query(
                    "SELECT pg_current_xact_id()::text", logger: TestEnvironment.logger
                ).decode(String.self) {
                    holderId.withLock { $0 = id }
                }
                while !release.isSet { try await Task.sleep(for: .milliseconds(20)) }
                if rollBack { throw CancellationError() }
            }
        }
        #expect(try await eventually { holderId.withLock { $0 } != nil })
        let id = try #require(holderId.withLock { $0 })
        return HeldTransaction(id: id, owner: owner, release: release, task: task)
    }

    /// Whether a session waits on this transaction.
    func isWaitedOn() async throws -> Bool {
        try await !owner.systemQuery(
            """
            SELECT 1 FROM pg_locks
            WHERE locktype = 'transactionid' AND transactionid::text = \(id) AND NOT granted
            """
        ).isEmpty
    }

    /// Ends the transaction (committed, or rolled back when started so).
    func end() async {
        release.set()
        _ = try? await task.value
    }
}
