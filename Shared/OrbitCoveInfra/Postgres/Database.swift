import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// The PostgreSQL system of record: a connection pool (run it as a `Service`) and the one
/// transaction helper every multi-statement write goes through.
package struct Database: Sendable {
    package let client: PostgresClient
    let logger: Logger

    package init(url: URL, maxConnections: Int = 20, logger: Logger) throws {
        var configuration = try Self.configuration(from: url)
        configuration.options.maximumConnections = maxConnections
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(30))
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    /// Whose rows a transaction may touch, as the row-level security policies read it.
    package enum AccessScope: Sendable {
        /// A request on behalf of this user: `app.current_user_id`.
        case user(UUID)
        /// Work that crosses communities on purpose (message handlers, retention jobs,
        /// redeeming an invite): `app.system`. Say it only where that is the point.
        case system
    }

    package enum IsolationLevel: Sendable {
        case readCommitted
        /// One snapshot for the whole transaction (sync reads its changes and rows in one).
        case repeatableRead
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    /// `userId` becomes `app.current_user_id` for that transaction only.
    @discardableResult
    package func transaction<Result: Sendable>(
        userId: UUID? = nil,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await transaction(scope: userId.map { .user($0) }, body)
    }

    /// Runs `body` in one transaction with the given access scope (none: no community's rows
    /// are visible) and isolation level.
    @discardableResult
    package func transaction<Result: Sendable>(
        scope: AccessScope?, isolation: IsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await client.withTransaction(logger: logger) { connection in
                if isolation == .repeatableRead {
                    try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: logger)
                }
                switch scope {
                case .user(let userId):
                    let value = userId.uuidString.lowercased()
                    try await connection.query(
                        "SELECT set_config('app.current_user_id', \(value), true)", logger: logger)
                case .system:
                    try await connection.query("SELECT set_config('app.system', 'on', true)", logger: logger)
                case nil:
                    break
                }
                return try await body(connection)
            }
        } catch let error as PostgresTransactionError {
            // The body's own error (an APIError, say) is what callers handle; the rollback that
            // followed it is an implementation detail.
            throw error.closureError ?? error.beginError ?? error.commitError ?? error
        }
    }

    /// A cheap round trip for readiness checks.
    package func ping() async throws {
        try await client.query("SELECT 1", logger: logger)
    }

    package static func configuration(from url: URL) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, let user = components.user
        else {
            throw ConfigurationError(variable: "database URL", reason: "expected postgres://user:password@host:port/db")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresClient.Configuration.TLS =
            components.queryItems?.contains(where: { $0.name == "sslmode" && $0.value == "require" }) == true
            ? .require(.makeClientConfiguration()) : .disable
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database,
            tls: tls)
    }
}
