import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws
    /// (unless the connection has closed, which ended the transaction already). In place of
    /// PostgresNIO's `withTransaction`, which sends its `COMMIT` or `ROLLBACK` on a closed
    /// connection too and waits for ever for the answer. A `COMMIT` that PostgreSQL answers
    /// `ROLLBACK` (a statement failed and `body` went on) throws ``TransactionRolledBack``:
    /// nothing the body wrote is in, and its caller must not say otherwise.
    package func inTransaction<Result>(
        logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await run("BEGIN", logger: logger)
        let result: Result
        do {
            result = try await body(self)
        } catch {
            if !isClosed, !Self.endedTheConnection(error) {
                _ = try? await query("ROLLBACK", logger: logger).collect()
            }
            throw error
        }
        try ensureOpen()
        let committed: PostgresQueryResult = try await query("COMMIT", logger: logger).get()
        guard committed.metadata.command == "COMMIT" else { throw TransactionRolledBack() }
        return result
    }
}

extension PostgresConnection {
    /// Whether `error` says the connection is closing or closed, when the transaction ended with
    /// it: a `ROLLBACK` sent then may reach the connection after its close and never be answered
    /// (the check of ``ensureOpen()`` can run before the close is complete).
    static func endedTheConnection(_ error: any Error) -> Bool {
        if error is ConnectionClosed { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown: return true
        default: return false
        }
    }
}

/// A statement was not sent: its connection had closed (PostgreSQL ended it, or the pool is
/// stopping). The database may be back on the next connection, as after any lost connection.
package struct ConnectionClosed: Error, CustomStringConvertible {
    package var description: String { "the database connection has closed" }
}

/// A transaction's `COMMIT` was answered `ROLLBACK`: one of its statements had failed.
package struct TransactionRolledBack: Error, CustomStringConvertible {
    package var description: String { "the transaction was rolled back at its commit" }
}
