import Logging
import PostgresNIO

/// A statement that runs on every request, prepared once per connection: PostgreSQL parses
/// and plans it the first time a connection runs it, then runs the kept plan, where an unnamed
/// statement is planned again on every request (`pgbench -M prepared` against `-M extended`,
/// BENCHMARKS.md). Rows come back as they are, read by name with ``RowReader``.
///
/// Only for statements whose generic plan is as good as a custom one: PostgreSQL plans the
/// first five runs for their parameters, then keeps a generic plan unless it costs more. A
/// statement whose best plan depends on its values (the calendar window's join of counts and
/// answers turns six times slower generic) stays unnamed. "Costs more" is by PostgreSQL's
/// estimates: where its statistics call a value rare (a community newer than the last ANALYZE
/// on a small database), the custom plan looks cheaper and is made again on every run, so the
/// statement is parsed once but planned as often as an unnamed one (the members page:
/// BENCHMARKS.md, "The second wall", 2026-11-30).
package protocol PreparedRows: PostgresPreparedStatement where Row == PostgresRow {}

extension PreparedRows {
    package func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs a prepared statement (preparing it on this connection first if it has not been).
    package func query<Statement: PreparedRows>(
        _ statement: Statement, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try ensureOpen()
        return try await execute(statement, logger: logger)
    }
}
