import ArgumentParser
import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO
import Synchronization

/// A pgbench script's statements run through PostgresNIO instead of libpq: the same SQL, the
/// same variables, one held connection per client as pgbench's `-c`, every row read. With
/// `--mode extended` each statement is unnamed (planned on every run, as `pgbench -M
/// extended`); with `--mode prepared` each is a `PostgresPreparedStatement`, prepared once per
/// connection as the services' hot statements are (as `pgbench -M prepared`). What it reaches is the
/// most any service on this driver could: the core read and calendar benchmarks print it
/// beside pgbench, so a service's share of pgbench splits into the driver's and its own.
///
/// Prints one line, `client=LABEL requests_per_s=… errors=0 rows=…`, where a transaction (one
/// pass over the script) counts as `--requests-per-transaction` requests and `rows` is how many
/// rows a pass read (a run that saw nothing shows). A statement that fails ends the run.
@main
struct SQLBenchmark: AsyncParsableCommand {
    @Option(help: "A pgbench script: statements ending with ';' at the end of a line, :name variables")
    var script: String
    @Option(
        name: .customLong("set"),
        help: "name=value; bound as a uuid, an integer, a timestamp (ISO 8601), a {uuid,…} array, or text")
    var variables: [String] = []
    @Option var clients = 16
    @Option var seconds = 10.0
    @Option var requestsPerTransaction = 1.0
    @Option var mode: Mode = .extended
    @Option var label = "postgresnio"

    enum Mode: String, ExpressibleByArgument { case extended, prepared }
    @Option var databaseURL = "postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove"

    func run() async throws {
        let logger = Logger(label: "sql-bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let parsed = try ScriptStatements(text: String(contentsOfFile: script, encoding: .utf8))
        let statements = try parsed.runs(with: Self.values(variables), mode: mode, logger: logger)
        guard let url = URL(string: databaseURL) else { throw ValidationError("bad --database-url") }
        var configuration = try Database.configuration(from: url)
        configuration.options.maximumConnections = clients
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let transactions = Count()
        let rowsPerTransaction = Count()
        let clients = clients
        let elapsed = try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await client.run() }
            defer { tasks.cancelAll() }
            // Every connection open before the clock starts, as pgbench's are.
            let opened = try await withThrowingTaskGroup(of: Void.self) { opening in
                for _ in 0..<clients {
                    opening.addTask { try await client.query("SELECT 1", logger: logger) }
                }
                try await opening.waitForAll()
                return ContinuousClock.now
            }
            let deadline = opened + .milliseconds(Int(seconds * 1_000))
            try await withThrowingTaskGroup(of: Void.self) { runs in
                for _ in 0..<clients {
                    runs.addTask {
                        try await client.withConnection { connection in
                            while ContinuousClock.now < deadline {
                                var rows = 0
                                for statement in statements { rows += try await statement(connection) }
                                rowsPerTransaction.value.store(rows, ordering: .relaxed)
                                transactions.value.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
                try await runs.waitForAll()
            }
            return opened.duration(to: .now)
        }
        let rate = Double(transactions.value.load(ordering: .relaxed)) / elapsed.seconds * requestsPerTransaction
        // The rows of a pass, so a run that saw nothing (another user, an empty window) shows.
        let rows = rowsPerTransaction.value.load(ordering: .relaxed)
        print("client=\(label) requests_per_s=\(String(format: "%.1f", rate)) errors=0 rows=\(rows)")
    }

    /// `name=value` pairs, each value typed by its text.
    static func values(_ pairs: [String]) throws -> [String: ScriptValue] {
        var values: [String: ScriptValue] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "=") else { throw ValidationError("expected name=value: \(pair)") }
            values[String(pair[..<equals])] = ScriptValue(String(pair[pair.index(after: equals)...]))
        }
        return values
    }
}

/// A count shared by the clients.
final class Count: Sendable {
    let value = Atomic<Int>(0)
}

/// A variable's value, bound with the type PostgreSQL would infer for pgbench's untyped text.
enum ScriptValue {
    case uuid(UUID)
    case uuids([UUID])
    case integer(Int)
    case timestamp(Date)
    case text(String)

    init(_ text: String) {
        if let uuid = UUID(uuidString: text) {
            self = .uuid(uuid)
        } else if let integer = Int(text) {
            self = .integer(integer)
        } else if let date = try? Date(text, strategy: .iso8601) {
            self = .timestamp(date)
        } else if let ids = Self.uuids(text) {
            self = .uuids(ids)
        } else {
            self = .text(text)
        }
    }

    /// `{id,id,…}`, every element a uuid.
    private static func uuids(_ text: String) -> [UUID]? {
        guard text.hasPrefix("{"), text.hasSuffix("}") else { return nil }
        let elements = text.dropFirst().dropLast().split(separator: ",")
        let ids = elements.compactMap { UUID(uuidString: String($0)) }
        return ids.isEmpty || ids.count != elements.count ? nil : ids
    }

    func append(to bindings: inout PostgresBindings) {
        switch self {
        case .uuid(let uuid): bindings.append(uuid)
        case .uuids(let uuids): bindings.append(uuids)
        case .integer(let integer): bindings.append(integer)
        case .timestamp(let date): bindings.append(date)
        case .text(let text): bindings.append(text)
        }
    }
}

/// A pgbench script's statements, with each `:name` turned into a numbered parameter.
struct ScriptStatements {
    /// Each statement's text with `$n` parameters, and the variable each parameter is.
    var statements: [(sql: String, parameters: [String])] = []

    init(text: String) throws {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }
        var current = ""
        for line in lines {
            current += line + "\n"
            if line.trimmingCharacters(in: .whitespaces).hasSuffix(";") {
                let statement = current.trimmingCharacters(in: .whitespacesAndNewlines).dropLast()
                statements.append(Self.numbered(String(statement)))
                current = ""
            }
        }
        guard current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, !statements.isEmpty else {
            throw ValidationError("the script must be statements each ending with ';' at the end of a line")
        }
    }

    /// `:name` (not a `::cast`) becomes `$n`, numbered by first appearance.
    static func numbered(_ sql: String) -> (sql: String, parameters: [String]) {
        var parameters: [String] = []
        var out = ""
        var index = sql.startIndex
        while index < sql.endIndex {
            let character = sql[index]
            let next = sql.index(after: index)
            let isCast = index > sql.startIndex && sql[sql.index(before: index)] == ":"
            if character == ":", !isCast, next < sql.endIndex, sql[next].isLetter || sql[next] == "_" {
                let end = sql[next...].firstIndex { !($0.isLetter || $0.isNumber || $0 == "_") } ?? sql.endIndex
                let name = String(sql[next..<end])
                if let known = parameters.firstIndex(of: name) {
                    out += "$\(known + 1)"
                } else {
                    parameters.append(name)
                    out += "$\(parameters.count)"
                }
                index = end
            } else {
                out.append(character)
                index = next
            }
        }
        return (out, parameters)
    }

    /// Runs one statement on a connection, reading every row; how many.
    typealias Run = @Sendable (PostgresConnection) async throws -> Int

    /// Each statement as a run on a connection that reads all its rows.
    func runs(with values: [String: ScriptValue], mode: SQLBenchmark.Mode, logger: Logger) throws -> [Run] {
        guard statements.count <= preparedSlots.count else {
            throw ValidationError("at most \(preparedSlots.count) statements")
        }
        preparedSQL = statements.map(\.sql)
        return try statements.indices.map { index in
            var bindings = PostgresBindings(capacity: statements[index].parameters.count)
            for name in statements[index].parameters {
                guard let value = values[name] else { throw ValidationError("no value for :\(name) (--set \(name)=…)") }
                value.append(to: &bindings)
            }
            switch mode {
            case .extended:
                let query = PostgresQuery(unsafeSQL: statements[index].sql, binds: bindings)
                return { connection in
                    var rows = 0
                    for try await _ in try await connection.query(query, logger: logger) { rows += 1 }
                    return rows
                }
            case .prepared:
                return Self.prepared(preparedSlots[index], bindings, logger: logger)
            }
        }
    }

    private static func prepared<Slot: StatementSlot>(
        _: Slot.Type, _ bindings: PostgresBindings, logger: Logger
    ) -> Run {
        { connection in
            var rows = 0
            for try await _ in try await connection.execute(Prepared<Slot>(bindings: bindings), logger: logger) {
                rows += 1
            }
            return rows
        }
    }
}

/// The script's statements, for the prepared statements' `sql`: set once, before any client
/// starts, and only read after.
nonisolated(unsafe) private var preparedSQL: [String] = []

/// A prepared statement is a type (its name and text are static), so each of the script's
/// statements gets one: `Prepared<S0>` is the first, and so on.
protocol StatementSlot: SendableMetatype { static var index: Int { get } }
enum S0: StatementSlot { static let index = 0 }
enum S1: StatementSlot { static let index = 1 }
enum S2: StatementSlot { static let index = 2 }
enum S3: StatementSlot { static let index = 3 }
enum S4: StatementSlot { static let index = 4 }
enum S5: StatementSlot { static let index = 5 }
enum S6: StatementSlot { static let index = 6 }
enum S7: StatementSlot { static let index = 7 }
enum S8: StatementSlot { static let index = 8 }
enum S9: StatementSlot { static let index = 9 }
private let preparedSlots: [any StatementSlot.Type] = [
    S0.self, S1.self, S2.self, S3.self, S4.self, S5.self, S6.self, S7.self, S8.self, S9.self,
]

struct Prepared<Slot: StatementSlot>: PostgresPreparedStatement {
    static var sql: String { preparedSQL[Slot.index] }
    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
