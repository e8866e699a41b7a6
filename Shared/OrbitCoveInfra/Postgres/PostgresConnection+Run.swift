import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs a statement for its effect and returns once PostgreSQL has finished it.
    ///
    /// `query` returns as soon as a statement that yields rows (a `SELECT` of a function, an
    /// `UPDATE … RETURNING`) has started; an error it raises while running travels with its rows.
    /// Left unread, that error surfaces only as the next statement's `25P02` ("current
    /// transaction is aborted"), or not at all when the next statement is the `COMMIT`, which
    /// PostgreSQL then turns into a rollback the caller is never told of. Every statement whose
    /// rows are not read goes through here.
    package func run(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws {
        for try await _ in try await self.query(query, logger: logger, file: file, line: line) {}
    }
}
