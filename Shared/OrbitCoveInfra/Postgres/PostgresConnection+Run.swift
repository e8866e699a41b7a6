import Foundation
import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs a statement for its effect and returns once PostgreSQL has finished it.
    ///
    /// `query` returns as soon as a statement that yields rows (a `SELECT` of a function, an
    /// `UPDATE … RETURNING`) has started; an error it raises while running travels with its rows.
    /// Left unread, that error surfaces only as the next statement's `25P02` ("current
    /// transaction is aborted"), or not at all when the next statement is the `COMMIT`, which
    /// PostgreSQL then turns into a rollback (``inTransaction(logger:_:)`` throws
    /// ``TransactionRolledBack`` for it, but cannot say which statement failed). Every statement whose
    /// rows are not read goes through here.
    package func run(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws {
        try ensureOpen()
        for try await _ in try await self.query(query, logger: logger, file: file, line: line) {}
    }

    /// PostgresNIO's `query`, refused at once on a connection that has closed. Calls that name
    /// only the statement and the logger come here (Swift prefers the overload that fills no
    /// default): PostgresNIO never answers a statement sent on a closed connection, so a
    /// transaction whose connection PostgreSQL ended between two statements (a restart, a
    /// failover) waited for ever (`ConnectionLossTests`). The price of being preferred: a
    /// `PSQLError` from here names this file and line, not the caller's (its query says which).
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try ensureOpen()
        return try await self.query(query, logger: logger, file: #fileID, line: #line)
    }

    /// Throws ``ConnectionClosed`` if the connection has closed. A close that lands between
    /// this check and the statement reaching the connection's event loop is not caught: the
    /// window is the hop to the loop, where the close was seen long before in every case met.
    package func ensureOpen() throws {
        if isClosed { throw ConnectionClosed() }
    }
}

/// A table whose rows are soft-deleted (`deleted_at`), for ``PostgresConnection/refusal(of:in:gone:logger:)``.
package enum SoftDeletedTable: String, Sendable {
    case posts
    case comments
    case events
}

extension PostgresConnection {
    /// Why a write guarded by `deleted_at IS NULL` (or a locking read) found no row that the
    /// request had just read: the row was deleted meanwhile (two deletes at once, a retry after
    /// a lost answer), which is `gone`; or it is still there and the second wall refused the
    /// write (the actor was demoted meanwhile), which is `403`.
    package func refusal(
        of id: UUID, in table: SoftDeletedTable, gone: APIError, logger: Logger
    ) async throws -> APIError {
        let rows = try await query(
            "SELECT 1 FROM \(unescaped: table.rawValue) WHERE id = \(id) AND deleted_at IS NULL", logger: logger)
        for try await _ in rows { return .forbidden }
        return gone
    }
}
