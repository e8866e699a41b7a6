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
    private let last: LastStatement
    private let task: Task<Void, any Error>

    private init(
        id: String, owner: Database, release: AtomicFlag, last: LastStatement, task: Task<Void, any Error>
    ) {
        (self.id, self.owner, self.release, self.last, self.task) = (id, owner, release, last, task)
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
        let last = LastStatement()
        let task = Task {
            try await owner.transaction(scope: .system) { connection in
                try await connection.run(statement, logger: TestEnvironment.logger)
                for try await id in try await connection.query(
                    "SELECT pg_current_xact_id()::text", logger: TestEnvironment.logger
                ).decode(String.self) {
                    holderId.withLock { $0 = id }
                }
                while !release.isSet { try await Task.sleep(for: .milliseconds(20)) }
                if let statement = last.statement.withLock({ $0 }) {
                    try await connection.run(statement, logger: TestEnvironment.logger)
                }
                if rollBack { throw CancellationError() }
            }
        }
        #expect(try await eventually { holderId.withLock { $0 } != nil })
        let id = try #require(holderId.withLock { $0 })
        return HeldTransaction(id: id, owner: owner, release: release, last: last, task: task)
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

    /// Runs `statement` in the transaction, then ends it as ``end()`` does; throws what either
    /// failed with (a deadlock PostgreSQL broke by failing this transaction, say).
    func end(after statement: PostgresQuery) async throws {
        last.statement.withLock { $0 = statement }
        release.set()
        try await task.value
    }

    /// The statement ``end(after:)`` runs before the end, shared with the holder's task.
    private final class LastStatement: Sendable {
        let statement = Mutex<PostgresQuery?>(nil)
    }
}
