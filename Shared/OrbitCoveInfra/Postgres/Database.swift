import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The PostgreSQL system of record: a connection pool (run it as a `Service`) and the one
/// transaction helper every multi-statement write goes through.
///
/// While PostgreSQL is unreachable, requests fail fast instead of piling up: a transaction
/// waits at most `connectionWait` for a connection and then answers `503 SERVICE_UNAVAILABLE`
/// with `Retry-After`, as it does when the database goes away in the middle of a transaction.
/// When a wait runs out, a TCP probe tells a busy pool (the database answers: only that
/// request gives up) from a database that is gone (a circuit breaker then answers the next
/// requests at once, until one call finds the database again).
package struct Database: Sendable {
    package let client: PostgresClient
    let inFlight = InFlight()
    let logger: Logger
    private let connectionWait: Duration
    /// `statement_timeout` of every transaction: far beyond any statement the services run. A
    /// statement that is its own transaction has the same from the role
    /// (`ALTER ROLE orbitcove_app SET statement_timeout`, deploy/postgres/init-roles.sh).
    private let statementTimeout = "30s"
    private let address: (host: String, port: Int)
    package let breaker: CircuitBreaker
    /// Woken after every transaction that wrote to the outbox commits; the relay listens.
    package let outboxWakeups = OutboxWakeups()

    /// `name` is the connections' `application_name`: `pg_stat_activity` says which service a
    /// backend serves.
    package init(
        url: URL, name: String? = nil, maxConnections: Int = 20, connectionWait: Duration = .seconds(2), logger: Logger
    ) throws {
        var configuration = try Self.configuration(from: url)
        if let name { configuration.options.additionalStartupParameters.append(("application_name", name)) }
        configuration.options.maximumConnections = maxConnections
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(30))
        configuration.options.connectTimeout = .seconds(5)
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
        self.connectionWait = connectionWait
        self.address = (configuration.host ?? "127.0.0.1", configuration.port ?? 5432)
        self.breaker = CircuitBreaker(name: "postgres", threshold: 1, cooldown: .seconds(2))
    }

    /// What a client sees while the database cannot be reached.
    package static let unavailable = APIError(
        .serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: "The service is briefly unavailable; try again",
        details: ["retryAfterSeconds": .number(2)], headers: [.retryAfter: "2"])

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
        try await framed { connection, idempotency in
            try await connection.inTransaction(logger: logger) { connection in
                try await enter(scope, isolation: isolation, on: connection)
                let result = try await body(connection)
                // Last before the commit: a request holding an Idempotency-Key records
                // that its writes are in (IdempotencyMiddleware).
                if let claim = idempotency.claim, try await claim.mark(on: connection, logger: logger) {
                    idempotency.marked.set()
                }
                return result
            }
        }
    }

    /// A write that is one statement and a transaction of its own, which PostgreSQL commits as
    /// the statement ends: the locks it takes are held for PostgreSQL's work alone, not also for
    /// a round trip and this process's turn to send a COMMIT (every other answer to an event
    /// waited for those; BENCHMARKS.md, issue 20). `reads` runs first, in a read-only
    /// transaction entered as `user` and ended before the statement runs (whatever it would
    /// write could not go with the statement), and returns the statement; it must let the
    /// database's errors go up (its COMMIT is sent with the statement, so a failure it caught
    /// could no longer stop the write). The statement itself must enter as `user`
    /// (`app_enter_as_user`) before it reads or writes; when `reads` is given the request's
    /// Idempotency-Key (`KeyMark`), mark it before its writes (`app_idempotency_applied`, after
    /// `pg_current_xact_id()`) and return whether it did as the boolean column
    /// ``keyMarkedColumn`` of its rows, as `calendar_answer_committing` does (migration 0082).
    /// The statement is not in the reads' transaction: what it needs to be as read, it checks.
    package func committingStatement(
        asUser user: UUID, _ reads: (PostgresConnection, KeyMark?) async throws -> PostgresQuery
    ) async throws -> [PostgresRow] {
        try await framed { connection, idempotency in
            let mark = idempotency.claim.map { KeyMark(owner: $0.userId, key: $0.key, claim: $0.id) }
            try await connection.run("BEGIN READ ONLY", logger: logger)
            let statement: PostgresQuery
            do {
                try await enter(.user(user), isolation: .readCommitted, on: connection)
                statement = try await reads(connection, mark)
            } catch {
                if !connection.isClosed, !PostgresConnection.endedTheConnection(error) {
                    _ = try? await connection.query("ROLLBACK", logger: logger).collect()
                }
                throw error
            }
            // The reads' COMMIT, the statement and one that confirms its commit, each queued
            // before the one before it answers: PostgresNIO sends each from the event loop as
            // the one before ends. The confirmation: PostgresNIO ends a statement's rows at its
            // CommandComplete, and PostgreSQL commits an implicit transaction at the Sync after
            // it, so the rows alone do not say the write is in (nor that another connection
            // would see it yet); a statement queued behind it is answered only after the commit.
            // A commit that fails is an error PostgresNIO does not expect then: it closes the
            // connection, and the queued statement fails with it. Queued on a closed connection,
            // none would be answered.
            try connection.ensureOpen()
            let readsEnded: EventLoopFuture<PostgresQueryResult> = connection.query("COMMIT", logger: logger)
            let written: EventLoopFuture<PostgresQueryResult> = connection.query(statement, logger: logger)
            let committed: EventLoopFuture<PostgresQueryResult> = connection.query("SELECT 1", logger: logger)
            let ended = await Self.outcome(of: readsEnded)
            let rows = await Self.outcome(of: written)
            let confirmed = await Self.outcome(of: committed)
            // The reads wrote nothing to keep; a COMMIT answered ROLLBACK says one of their
            // statements failed and they went on, against the contract above.
            if case .success(let end) = ended, end.metadata.command != "COMMIT" {
                logger.error("a committing statement's reads went on after a failed statement")
            }
            let result = try rows.get().rows
            if case .failure(let error) = confirmed {
                // The statement ran and its commit failed, or the connection closed before the
                // commit was known: the write is not known to be in; the client may try again.
                logger.warning(
                    "a committing statement's commit was not confirmed",
                    metadata: ["error": .string(logDescription(of: error))])
                throw Self.unavailable
            }
            if mark != nil { recordMark(in: result, on: idempotency) }
            return result
        }
    }

    /// The column of a committing statement's rows that says whether it marked the request's
    /// Idempotency-Key.
    package static let keyMarkedColumn = "key_marked"

    /// Records that the committed statement marked the key, as its rows say. A statement without
    /// the column (a programming error: the key is not marked, and a retry after a failure that
    /// follows the commit would write again) is logged, not thrown: its write is in.
    private func recordMark(in rows: [PostgresRow], on idempotency: IdempotencyMark) {
        guard let first = rows.first else { return }
        let row = first.makeRandomAccess()
        guard row.contains(Self.keyMarkedColumn), let marked = try? row[Self.keyMarkedColumn].decode(Bool.self) else {
            logger.error("a committing statement given an Idempotency-Key returned no boolean \(Self.keyMarkedColumn)")
            return
        }
        if marked { idempotency.marked.set() }
    }

    /// A queued query's answer, or its failure, once it came.
    private static func outcome<Value: Sendable>(
        of future: EventLoopFuture<Value>
    ) async -> Swift.Result<Value, any Error> {
        do { return .success(try await future.get()) } catch { return .failure(error) }
    }

    /// The request's claim on an Idempotency-Key, for a statement that marks it itself
    /// (``committingStatement(asUser:_:)``): `app_idempotency_applied(owner, key, claim)`.
    package struct KeyMark: Sendable {
        package let owner: UUID
        package let key: String
        package let claim: UUID
    }

    /// What every transaction shares: the outbox wake-up after a commit that wrote messages,
    /// the request's Idempotency-Key (marked by the transaction, recorded once it committed),
    /// the breaker and the bounded wait for a connection.
    private func framed<Result: Sendable>(
        _ work: (PostgresConnection, IdempotencyMark) async throws -> Result
    ) async throws -> Result {
        let written = AtomicFlag()
        defer { if written.isSet { outboxWakeups.wake() } }
        let idempotency = IdempotencyMark(claim: IdempotencyClaim.current)
        let result = try await guarded {
            try await Outbox.$written.withValue(written) {
                try await withBoundedWait { connection in try await work(connection, idempotency) }
            }
        }
        if idempotency.marked.isSet { idempotency.claim?.committed() }
        return result
    }

    /// The request's claim on an Idempotency-Key, if it holds one, and whether this transaction
    /// marked it.
    private struct IdempotencyMark {
        let claim: IdempotencyClaim?
        let marked = AtomicFlag()
    }

    /// Sets the transaction's isolation level, scope and bound on every statement (a database
    /// that stops answering after the lease, or a lock that is never released, must not hang a
    /// request).
    private func enter(
        _ scope: AccessScope?, isolation: IsolationLevel, on connection: PostgresConnection
    )
        async throws
    {
        if isolation == .repeatableRead {
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: logger)
        }
        let timeout = statementTimeout
        switch scope {
        case .user(let userId):
            // Sets `app.current_user_id` and reads the user's communities once, for every
            // policy in this transaction to compare against (migration 0024).
            for try await _ in try await connection.query(
                EnterAsUser(userId: userId, statementTimeout: timeout), logger: logger)
            {}
        case .system:
            try await connection.run(
                """
                SELECT set_config('app.system', 'on', true), set_config('statement_timeout', \(timeout), true)
                """, logger: logger)
        case nil:
            try await connection.run("SELECT set_config('statement_timeout', \(timeout), true)", logger: logger)
        }
    }

    /// Runs `body` on a pooled connection outside any transaction: each statement is its own,
    /// with no user scope, so row-level security shows it nothing. Only for a statement whose
    /// access rule is the statement itself (a `SECURITY DEFINER` function that applies a
    /// policy's rule to the ids it is given, such as `app_community_standing`, or one that
    /// enters as its user first, as the `Idempotency-Key` functions do): one round trip where a
    /// transaction takes four. Same bounded wait and breaker as ``transaction(scope:isolation:_:)``.
    package func withConnection<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await guarded { try await withBoundedWait(body) }
    }

    /// Runs `work` past the breaker, recording its outcome, and turns losing the database into
    /// a 503.
    private func guarded<Result: Sendable>(_ work: () async throws -> Result) async throws -> Result {
        guard inFlight.enter() else { throw Self.unavailable }
        defer { inFlight.leave() }
        guard breaker.allowsCall() else { throw Self.unavailable }
        do {
            let result = try await work()
            breaker.succeeded()
            return result
        } catch {
            throw await settle(error)
        }
    }

    /// Records the outcome with the breaker, and turns losing the database into a 503.
    private func settle(_ error: any Error) async -> any Error {
        if error is CancellationError {
            breaker.abandoned()  // The caller went away: nothing was learnt about the database.
            return error
        }
        guard Self.meansUnreachable(error) else {
            breaker.succeeded()  // The database answered; the statement or the caller failed.
            return error
        }
        // A busy pool, or one dropped connection, is not an outage: only a database that no
        // longer accepts connections opens the breaker.
        if await TCPProbe.connects(to: address.host, port: address.port) {
            logger.warning("database connection lost or busy", metadata: ["error": .string(logDescription(of: error))])
            breaker.succeeded()
            return Self.unavailable
        }
        breaker.failed()
        logger.warning("database unreachable", metadata: ["error": .string(logDescription(of: error))])
        return Self.unavailable
    }

    /// The SQLSTATE `app_enter_as_user` and `app_community_standing` refuse a deleted account
    /// with (migrations 0076, 0081), and an id with no account at all (0081): the request's
    /// token outlived its account, or names one the database does not have, answered
    /// `401 ACCOUNT_DELETED`.
    package static let accountDeleted = "OCA01"

    /// A failure that is the moment's, not the work's, so the same work would pass if tried
    /// again: the database unreachable, or PostgreSQL's connection (08), resource (53), operator
    /// (57: a statement timeout or a shutdown), lock (55P03) and transaction-rollback (40:
    /// deadlock, serialization) classes. A request gets `503` with `Retry-After` for it
    /// (`RequestIdMiddleware`); a batch of messages is not split over it (`MessageBatcher`).
    package static func isPassing(_ error: any Error) -> Bool {
        if (error as? APIError)?.status == .serviceUnavailable { return true }
        guard let code = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return ["08", "53", "57", "40"].contains(String(code.prefix(2))) || code == "55P03"
    }

    /// Whether `error` says the database is gone (or going), rather than that a statement failed.
    static func meansUnreachable(_ error: any Error) -> Bool {
        if error is ConnectionWaitExceeded || error is ConnectionClosed { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .poolClosed, .clientClosedConnection:
            return true
        case .server:
            // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections; class 08.
            let state = error.serverInfo?[.sqlState] ?? ""
            return ["57P01", "57P02", "57P03", "53300"].contains(state) || state.hasPrefix("08")
        default:
            return false
        }
    }

    /// Runs `body` on a pooled connection, giving up if none is handed over within
    /// `connectionWait`. The lease is waited for in a child task; the caller waits for the first
    /// of its outcome and a timer on an event loop, and on a failure cancels the child, which
    /// ends a wait for a lease still under way (the pool honours its cancellation). Every
    /// statement passes here: the timer replaced a second task sleeping, whose dispatch timer
    /// showed in core's profiles. A caller whose task is cancelled before it had a connection
    /// gets `CancellationError`, whichever way the wait ended.
    private func withBoundedWait<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withoutActuallyEscaping(body) { body in
            let work = LeasedWork(body: body)
            let lease = LeaseState()
            let outcome = LeaseOutcome<Result>()
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        outcome.settle(
                            .success(
                                try await client.withConnection { connection in
                                    // Too late: the caller was already told to try again, so nothing runs.
                                    guard lease.settle(.leased) else { throw ConnectionWaitExceeded() }
                                    return try await work.body(connection)
                                }))
                    } catch {
                        outcome.settle(.failure(error))
                    }
                }
                // Cancellation of the caller reaches the child, as without this deadline: a
                // lease still waited for ends, a transaction already under way finishes.
                let loop = MultiThreadedEventLoopGroup.singleton.any()
                let deadline = loop.scheduleTask(in: TimeAmount(connectionWait)) {
                    if lease.settle(.timedOut) { outcome.settle(.failure(ConnectionWaitExceeded())) }
                }
                defer { deadline.cancel() }
                switch await outcome.value() {
                case .success(let result):
                    return result
                case .failure(let error):
                    // The group waits for the child on the way out: stop its wait for a lease.
                    group.cancelAll()
                    if Task.isCancelled, !lease.wasLeased { throw CancellationError() }
                    throw error
                }
            }
        }
    }

    /// One statement as the system, outside any request (the outbox relay, pruners, status
    /// reads): these tables are the services' own, and row-level security shows them to no user.
    @discardableResult
    package func systemQuery(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await transaction(scope: .system) { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }

    /// Whether PostgreSQL knows the time zone `name` (`pg_timezone_names`): a zone a community
    /// or quiet hours use is read in SQL too, and ICU keeps zones tzdata dropped.
    package func knowsZone(_ name: String) async throws -> Bool {
        try await systemQuery("SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = \(name))").first?
            .decode(Bool.self) ?? false
    }

    /// A cheap round trip for readiness checks.
    package func ping() async throws {
        try await query("SELECT 1")
    }

    /// One statement on a pooled connection, outside the breaker (readiness checks, the relay's
    /// idle poll), counted with the calls a stopping pool waits for (``service(drainTimeout:)``).
    @discardableResult
    package func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        guard inFlight.enter() else { throw Self.unavailable }
        defer { inFlight.leave() }
        return try await client.withConnection { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }

    /// libpq's `sslmode` values, meaning what they mean there: `require` encrypts without
    /// checking who answers (unless `sslrootcert` names a CA, then it is `verify-ca`),
    /// `verify-ca` checks the certificate chain, `verify-full` also the host name. The CA is
    /// `sslrootcert` (a PEM file) or the system's trust store.
    static func tlsMode(sslmode: String, rootCertificate: String?) throws -> PostgresClient.Configuration.TLS {
        func configuration(_ verification: CertificateVerification) throws -> TLSConfiguration {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = verification
            if let rootCertificate, verification != .none {
                guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                    throw ConfigurationError(
                        variable: "database URL", reason: "cannot read sslrootcert \(rootCertificate)")
                }
                tls.trustRoots = .file(rootCertificate)
            }
            return tls
        }
        switch sslmode {
        case "disable": return .disable
        case "allow", "prefer": return .prefer(try configuration(.none))
        case "require": return .require(try configuration(rootCertificate == nil ? .none : .noHostnameVerification))
        case "verify-ca": return .require(try configuration(.noHostnameVerification))
        case "verify-full": return .require(try configuration(.fullVerification))
        default:
            throw ConfigurationError(
                variable: "database URL",
                reason: "sslmode must be disable, allow, prefer, require, verify-ca or verify-full")
        }
    }

    package static func configuration(from url: URL) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, let user = components.user
        else {
            throw ConfigurationError(variable: "database URL", reason: "expected postgres://user:password@host:port/db")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let tls = try tlsMode(sslmode: query["sslmode"] ?? "disable", rootCertificate: query["sslrootcert"])
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database,
            tls: tls)
    }
}

/// The first statement of every transaction a request makes, prepared once per connection.
struct EnterAsUser: PreparedRows {
    static let sql = "SELECT app_enter_as_user($1), set_config('statement_timeout', $2, true)"
    var userId: UUID
    var statementTimeout: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(userId)
        bindings.append(statementTimeout)
        return bindings
    }
}

struct ConnectionWaitExceeded: Error, CustomStringConvertible {
    var description: String { "no database connection became free in time" }
}

/// Who won the race between the pool handing over a connection and the deadline: exactly
/// one of them, so a transaction never runs after its caller was answered 503.
private final class LeaseState: Sendable {
    enum Outcome: Int {
        case leased = 1
        case timedOut = 2
    }
    private let value = Atomic<Int>(0)

    /// True for the first outcome only.
    func settle(_ outcome: Outcome) -> Bool {
        value.compareExchange(expected: 0, desired: outcome.rawValue, ordering: .acquiringAndReleasing).exchanged
    }

    var wasLeased: Bool { value.load(ordering: .acquiring) == Outcome.leased.rawValue }
}

/// The first of a lease's outcomes (the work's result or error, or the deadline passing),
/// handed to the caller however the two race: whichever settles first is the outcome, and the
/// caller may ask before or after it is settled.
private final class LeaseOutcome<Value: Sendable>: Sendable {
    private enum State {
        case open
        case awaited(CheckedContinuation<Result<Value, any Error>, Never>)
        case settled(Result<Value, any Error>)
        case delivered
    }
    private let state = Mutex<State>(.open)

    func settle(_ outcome: Result<Value, any Error>) {
        let waiting: CheckedContinuation<Result<Value, any Error>, Never>? = state.withLock { state in
            switch state {
            case .open:
                state = .settled(outcome)
                return nil
            case .awaited(let continuation):
                state = .delivered
                return continuation
            case .settled, .delivered:
                return nil
            }
        }
        waiting?.resume(returning: outcome)
    }

    func value() async -> Result<Value, any Error> {
        await withCheckedContinuation { continuation in
            let ready: Result<Value, any Error>? = state.withLock { state in
                switch state {
                case .open:
                    state = .awaited(continuation)
                    return nil
                case .settled(let outcome):
                    state = .delivered
                    return outcome
                case .awaited, .delivered:
                    preconditionFailure("a lease's outcome is asked for once")
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// `@unchecked Sendable`: the body is called by exactly one child task, once, while the
/// caller waits for the task group (``Database/withBoundedWait(_:)`` does not return before
/// every child has ended), so it is never used concurrently or after it goes out of scope.
private struct LeasedWork<Result>: @unchecked Sendable {
    let body: (PostgresConnection) async throws -> Result
}
