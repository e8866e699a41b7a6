import PostgresNIO

/// What of an error may go into a log: PostgreSQL errors carry the bound values of their
/// query in their debug text, so only the SQLSTATE and the server's message are kept.
package func logDescription(of error: any Error) -> String {
    if let error = error as? PSQLError {
        guard let info = error.serverInfo else { return "postgres \(error.code)" }
        let state = info[.sqlState] ?? "?"
        let message = info[.message] ?? ""
        return "postgres \(state): \(message)"
    }
    return String(describing: error)
}
