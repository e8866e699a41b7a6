import CoreService
import Foundation
import Hummingbird
import HummingbirdTesting
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import ServiceLifecycle
import Testing

/// The delivery promises under faults, through the production relay and consumer: a broker
/// restart in the middle of a burst, a consumer killed with unacked messages, and a broker
/// that is down when requests commit. These stop and start the shared test broker, so
/// `make test` runs this suite on its own, after the others.
@Suite(.serialized) struct FaultToleranceTests {
    /// For the write path's cache invalidation; creating communities invalidates nothing.
    static let redis: RedisClient = {
        do {
            return try RedisClient(url: TestEnvironment.redisURL, connections: 1, logger: TestEnvironment.logger)
        } catch {
            fatalError("the test Redis URL is not valid: \(error)")
        }
    }()

    /// Creates `count` communities the production way (row + outbox message in one transaction).
    static func createCommunities(_ count: Int, database: Database) async throws -> [UUID] {
        let owner = try await makeUser(database)
        let cache = CommunityCache(redis: Self.redis, ttlSeconds: 60, logger: TestEnvironment.logger)
        let writes = CommunityWrites(database: database, cache: cache, logger: TestEnvironment.logger)
        let store = CommunityStore(database: database, writes: writes, logger: TestEnvironment.logger)
        var ids: [UUID] = []
        for index in 0..<count {
            ids.append(try await store.create(.init(name: "Burst \(index)"), by: owner).id)
        }
        return ids
    }

    static func makeUser(_ database: Database) async throws -> UUID {
        let tag = UUID().lowercasedString
        let rows = try await database.systemQuery(
            """
            INSERT INTO users (apple_id, email, display_name) VALUES (\("fault:\(tag)"), \("\(tag)@example.com"), 'Fault')
            RETURNING id
            """)
        for row in rows { return try row.decode(UUID.self) }
        throw TestFailure("no user created")
    }

    /// How many notification rows exist for `communities`, and for how many distinct ones.
    static func notifications(for communities: [UUID], _ database: Database) async throws -> (rows: Int, distinct: Int)
    {
        let rows = try await database.systemQuery(
            """
            SELECT count(*)::int, count(DISTINCT community_id)::int FROM notifications
            WHERE community_id = ANY(\(communities))
            """)
        for row in rows { return try row.decode((Int, Int).self) }
        return (0, 0)
    }

    static func relayServices(_ database: Database) throws -> [any Service] {
        let publisher = AMQPPublisher(
            settings: try TestEnvironment.amqpSettings(), topology: .forQueues(QueueName.allCases),
            logger: TestEnvironment.logger)
        let relay = OutboxRelay(
            database: database, publisher: publisher, appId: "fault-tests", pollInterval: .milliseconds(200),
            logger: TestEnvironment.logger)
        return [publisher, relay]
    }

    static func notificationsApp() throws -> some ApplicationProtocol {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-notifications")
        return runtime.makeApplication(try NotificationsApplication.parts(runtime: runtime))
    }

    @Test func aBrokerRestartInTheMiddleOfABurstLosesAndDuplicatesNothing() async throws {
        try await withTestDatabase { database in
            try await withServices(try Self.relayServices(database)) {
                try await Self.notificationsApp().test(.router) { _ in
                    let creating = Task { try await Self.createCommunities(1000, database: database) }
                    // Restart once part of the burst has gone through.
                    #expect(
                        try await eventually(timeout: .seconds(60)) {
                            try await count(
                                "SELECT count(*)::int FROM notifications WHERE title LIKE 'Burst %'", in: database)
                                >= 100
                        })
                    try Broker.restart()
                    let communities = try await creating.value
                    #expect(
                        try await eventually(timeout: .seconds(180), every: .milliseconds(500)) {
                            try await Self.notifications(for: communities, database).rows >= 1000
                        })
                    try await Task.sleep(for: .seconds(1))
                    let counts = try await Self.notifications(for: communities, database)
                    #expect(counts.rows == 1000 && counts.distinct == 1000)
                }
            }
        }
    }

    @Test func aConsumerKilledWithUnackedMessagesLosesAndDuplicatesNothing() async throws {
        try await withTestDatabase { database in
            let communities = try await Self.createCommunities(300, database: database)
            let consumer = try ServiceProcess.start("orbitcove-notifications")
            try await withServices(try Self.relayServices(database)) {
                #expect(
                    try await eventually(timeout: .seconds(60), every: .milliseconds(20)) {
                        try await Self.notifications(for: communities, database).rows >= 30
                    })
                consumer.kill()
                let processedByTheKilled = try await Self.notifications(for: communities, database).rows
                #expect(processedByTheKilled < 300, "the consumer finished before it could be killed")
                // A new consumer picks up what the dead one held unacknowledged.
                try await Self.notificationsApp().test(.router) { _ in
                    #expect(
                        try await eventually(timeout: .seconds(60)) {
                            try await Self.notifications(for: communities, database).rows >= 300
                        })
                    try await Task.sleep(for: .seconds(1))
                }
            }
            let counts = try await Self.notifications(for: communities, database)
            #expect(counts.rows == 300 && counts.distinct == 300)
        }
    }

    @Test func aRequestThatCommitsWhileTheBrokerIsDownIsDeliveredLater() async throws {
        try await withTestDatabase { database in
            try Broker.stop()
            let communities: [UUID]
            do {
                communities = try await Self.createCommunities(5, database: database)
            } catch {
                try Broker.start()
                throw error
            }
            try await withServices(try Self.relayServices(database)) {
                try await Task.sleep(for: .seconds(1))
                let waiting = try await count(
                    "SELECT count(*)::int FROM outbox WHERE community_id = ANY(\(communities)) AND published_at IS NULL",
                    in: database)
                #expect(waiting == 5)
                try Broker.start()
                try await Self.notificationsApp().test(.router) { _ in
                    let delivered = try await eventually(timeout: .seconds(60)) {
                        try await Self.notifications(for: communities, database).rows == 5
                    }
                    #expect(delivered)
                }
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The local stack's RabbitMQ node, stopped and started in place (its data stays).
enum Broker {
    static let node = ProcessInfo.processInfo.environment["ORBITCOVE_TEST_RABBITMQ_NODE"] ?? "orbitcove@localhost"

    static func stop() throws { try rabbitmqctl("stop_app") }

    static func start() throws {
        try rabbitmqctl("start_app")
        try rabbitmqctl("await_startup --timeout 60")
    }

    /// Through `system(3)`: rabbitmqctl's Erlang helpers outlive it holding its output pipes,
    /// which Foundation's `Process` plumbing does not survive.
    private static func rabbitmqctl(_ arguments: String) throws {
        let status = system("cd / && rabbitmqctl -q -n \(node) \(arguments) >/dev/null 2>&1")
        guard status == 0 else { throw TestFailure("rabbitmqctl \(arguments) exited with \(status)") }
    }

    static func restart() throws {
        try stop()
        try start()
    }
}

/// A service executable from this build, run against the test servers.
final class ServiceProcess: Sendable {
    private let process: Process

    private init(process: Process) { self.process = process }

    static func start(_ name: String) throws -> ServiceProcess {
        // The test bundle sits in the build's bin folder, next to the executables.
        let binFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let process = Process()
        process.executableURL = binFolder.appendingPathComponent(name)
        var environment = ProcessInfo.processInfo.environment
        environment["ORBITCOVE_DATABASE_URL"] = TestEnvironment.databaseURL.absoluteString
        environment["ORBITCOVE_AMQP_URL"] = TestEnvironment.amqpURL.absoluteString
        environment["ORBITCOVE_REDIS_URL"] = TestEnvironment.redisURL.absoluteString
        environment["ORBITCOVE_HTTP_PORT"] = String(try freePort())
        environment["ORBITCOVE_LOG_LEVEL"] = "warning"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return ServiceProcess(process: process)
    }

    /// SIGKILL: no graceful shutdown, no acks for what it holds.
    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
