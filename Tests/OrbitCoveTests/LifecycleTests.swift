import AuthService
import CoreService
import Foundation
import JWTKit
import MediaService
import NIOPosix
import NotificationsService
import OrbitCoveInfra
import RemindersService
import Testing

/// Nothing a service is built from starts in `init`: its threads, pools and clients start when
/// the service group runs it and stop when the group shuts down. So building a service and
/// dropping it (a test that reads a router, a start-up that fails further on) leaves no thread
/// behind, and neither does running it and shutting it down.
///
/// The threads counted are the whole process's (`/proc/self/task`), so `make test` runs this
/// suite on its own; beside other suites the counts would move with their threads.
@Suite(.serialized) struct LifecycleTests {
    /// Every service's parts as its executable builds them; notifications with the APNs
    /// provider (pointed at the shared stand-in), whose HTTP client is one of those parts.
    static func everyService() async throws -> [ServiceParts] {
        let (_, apns) = try await SharedAPNs.shared.start()
        func runtime(_ name: String) throws -> ServiceRuntime { try TestEnvironment.runtime(name: "orbitcove-\(name)") }
        return [
            try await AuthApplication.parts(
                runtime: runtime("auth"),
                environment: Environment(["ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation])),
            try CoreApplication.parts(runtime: runtime("core")),
            try NotificationsApplication.parts(runtime: runtime("notifications"), environment: Environment(apns)),
            try MediaApplication.parts(runtime: runtime("media")),
            try RemindersApplication.parts(runtime: runtime("reminders")),
        ]
    }

    @Test func buildingEveryServiceAndDroppingItLeavesNoThreadBehind() async throws {
        // The process-wide threads (event loops, the APNs stand-in) start here, once.
        _ = try await Self.everyService()
        let before = try threadCount()
        for _ in 0..<3 { _ = try await Self.everyService() }
        let after = try await settledThreadCount(atMost: before)
        #expect(after <= before, "\(after - before) threads were started by parts that never ran")
    }

    @Test func runningEveryServiceThenShuttingItDownLeavesNoThreadBehind() async throws {
        // Once first, for the process-wide threads a run starts (and libdispatch's workers).
        try await withServices(try await Self.everyService().flatMap(\.services)) {}
        let before = try threadCount()
        try await withServices(try await Self.everyService().flatMap(\.services)) {
            // Each service has at least its blocking pool's two threads while it runs.
            let started = try await eventually { try threadCount() >= before + 5 * 2 }
            #expect(started, "the services' threads did not start")
        }
        let after = try await settledThreadCount(atMost: before)
        #expect(after <= before, "\(after - before) threads outlived their service group")
    }

    /// A call before the start waits for it (then Redis has its own timeout for the command); a
    /// call after the stop fails at once with a reason, instead of hanging.
    @Test func callsBeforeTheStartWaitAndCallsAfterTheStopFail() async throws {
        let pool = BlockingPool(threads: 1)
        let redis = try RedisClient(
            url: TestEnvironment.redisURL, connections: 1, timeout: .milliseconds(200), logger: TestEnvironment.logger)
        let publisher = AMQPPublisher(
            settings: try TestEnvironment.amqpSettings(), topology: .forQueues(named: []),
            logger: TestEnvironment.logger)
        let early = Task { try await pool.run { 42 } }
        let earlyPing = Task { try await redis.ping() }
        try await Task.sleep(for: .milliseconds(400))  // Longer than the command timeout.
        try await withServices([redis, publisher, pool]) {
            #expect(try await early.value == 42)
            try await earlyPing.value
            try await redis.ping()
            try await publisher.check()
        }
        await #expect(throws: ServiceNotRunning.self) { try await pool.run { 1 } }
        await #expect(throws: ServiceNotRunning.self) { try await publisher.check() }
        let refusal = await #expect(throws: RedisError.self) { try await redis.ping() }
        #expect(refusal?.message.contains("stopped") == true)
    }

    /// The count sees what the old initialisers did (`NIOThreadPool.start()`), until shutdown.
    @Test func theCountSeesAPoolsThreadsUntilItIsShutDown() async throws {
        let before = try threadCount()
        let pool = NIOThreadPool(numberOfThreads: 3)
        pool.start()
        #expect(try threadCount() >= before + 3)
        try await pool.shutdownGracefully()
        #expect(try await settledThreadCount(atMost: before) <= before)
    }
}

/// The threads of this process.
private func threadCount() throws -> Int {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count
}

/// The thread count once it has come down to `limit`, or after `timeout`: a joined thread
/// leaves `/proc` a moment later, and an idle libdispatch worker after a few seconds.
private func settledThreadCount(atMost limit: Int, timeout: Duration = .seconds(20)) async throws -> Int {
    let deadline = ContinuousClock.now + timeout
    var count = try threadCount()
    while count > limit, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(100))
        count = try threadCount()
    }
    return count
}
