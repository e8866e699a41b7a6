import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO
import ServiceLifecycle

/// Where the real servers for tests are: `make test` exports these (the local stack's test
/// database, vhost and Redis database); the defaults match it.
enum TestEnvironment {
    static let env = ProcessInfo.processInfo.environment

    static let databaseURL = url(
        "ORBITCOVE_TEST_DATABASE_URL", default: "postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove_test")
    static let ownerDatabaseURL = url(
        "ORBITCOVE_TEST_MIGRATION_DATABASE_URL",
        default: "postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:55432/orbitcove_test")
    static let amqpURL = url(
        "ORBITCOVE_TEST_AMQP_URL", default: "amqp://orbitcove:orbitcove@127.0.0.1:55672/orbitcove_test")
    static let redisURL = url("ORBITCOVE_TEST_REDIS_URL", default: "redis://127.0.0.1:56379/1")

    private static func url(_ name: String, default fallback: String) -> URL {
        guard let url = URL(string: env[name] ?? fallback) else { fatalError("\(name) is not a URL") }
        return url
    }

    /// The suite runs many services at once on a small machine: waits a production service
    /// keeps to milliseconds get room here, except in the tests that measure them (they say so).
    static let redisTimeout = Duration.seconds(1)
    static let relaxedWaits = ["ORBITCOVE_REDIS_TIMEOUT_MS": "1000", "ORBITCOVE_DATABASE_WAIT_MS": "15000"]
    /// Pools of a few connections: dozens of services run at once in the suite, and PostgreSQL
    /// refuses connections past `max_connections` (a refused connection reads as an outage).
    static let smallPools = ["ORBITCOVE_DATABASE_POOL_SIZE": "5"]

    static let logger: Logger = {
        var logger = Logger(label: "tests")
        logger.logLevel = env["ORBITCOVE_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return logger
    }()

    static func amqpSettings(_ name: String = "tests") throws -> AMQPSettings {
        try AMQPSettings(url: amqpURL, heartbeatSeconds: 10, connectionName: "\(name)-\(UUID().uuidString.prefix(8))")
    }

    /// Settings for a service under test: the test servers, a free port, and `extra` on top.
    static func settings(name: String, port: Int? = nil, extra: [String: String] = [:]) throws -> ServiceSettings {
        var values = [
            "ORBITCOVE_DATABASE_URL": databaseURL.absoluteString,
            "ORBITCOVE_AMQP_URL": amqpURL.absoluteString,
            "ORBITCOVE_REDIS_URL": redisURL.absoluteString,
            "ORBITCOVE_LOG_LEVEL": logger.logLevel.rawValue,
        ].merging(relaxedWaits) { current, _ in current }.merging(smallPools) { current, _ in current }
        if let port { values["ORBITCOVE_HTTP_PORT"] = String(port) }
        values.merge(extra) { _, new in new }
        return try ServiceSettings(name: name, defaultPort: 0, environment: Environment(values))
    }

    /// A made-up client address (sent as the gateway's `X-Real-IP`), so each test has rate
    /// limit budgets of its own however often the suite runs.
    static func uniqueClientAddress() -> String {
        "10.\(UInt8.random(in: 0...255)).\(UInt8.random(in: 0...255)).\(UInt8.random(in: 1...254))"
    }

    static func runtime(name: String, port: Int? = nil, extra: [String: String] = [:]) throws -> ServiceRuntime {
        ServiceRuntime(settings: try settings(name: name, port: port, extra: extra), logger: logger)
    }
}

/// Runs `services` in a `ServiceGroup` around `body`, then shuts them down gracefully.
@discardableResult
func withServices<Result: Sendable>(
    _ services: [any Service], _ body: @Sendable () async throws -> Result
) async throws -> Result {
    let group = ServiceGroup(
        configuration: .init(services: services.map { .init(service: $0) }, logger: TestEnvironment.logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        do {
            let result = try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}

/// A database client on the test database, running for the duration of `body`.
@discardableResult
func withTestDatabase<Result: Sendable>(
    url: URL = TestEnvironment.databaseURL, _ body: @Sendable (Database) async throws -> Result
) async throws -> Result {
    let database = try Database(
        url: url, maxConnections: 4, connectionWait: .seconds(15), logger: TestEnvironment.logger)
    do {
        return try await withServices([database.service()]) { try await body(database) }
    } catch let error as PSQLError {
        throw ServerSaid(error: error)
    }
}

/// A new account's id, made in the database alone: a transaction entered as a user needs one
/// (`app_enter_as_user` refuses an id with no account).
func newUser(in database: Database) async throws -> UUID {
    try await database.transaction(scope: .system) { connection in
        var made: UUID?
        for try await id in try await connection.query(
            """
            INSERT INTO users (apple_id, email, display_name)
            VALUES (\("test:\(UUID())"), 'someone@example.com', 'Someone') RETURNING id
            """, logger: TestEnvironment.logger
        ).decode(UUID.self) {
            made = id
        }
        guard let made else { throw TestFailure("no user made") }
        return made
    }
}

/// A `PSQLError` that escaped a test, told in full: its own description is a placeholder
/// ("Generic description to prevent accidental leakage"), and a failure in CI must say what
/// PostgreSQL said.
struct ServerSaid: Error, CustomStringConvertible {
    let error: PSQLError
    var description: String { String(reflecting: error) }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
func eventually(
    timeout: Duration = .seconds(15), every interval: Duration = .milliseconds(50),
    _ condition: @Sendable () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// A TCP port nobody listens on right now.
func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(descriptor, raw, length) == 0 && getsockname(descriptor, raw, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Rows of a single-integer query.
/// The first column of the first row, read as the system so row-level security hides nothing.
func count(_ query: PostgresQuery, in database: Database) async throws -> Int {
    try await database.transaction(scope: .system) { connection in
        let rows = try await connection.query(query, logger: TestEnvironment.logger)
        for try await (value) in rows.decode(Int.self) { return value }
        return 0
    }
}
