import ArgumentParser
import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Messaging throughput and latency through our Swift code, for `scripts/bench/messaging.sh`,
/// which runs it beside the C reference client. Prints one `key=value` line.
///
/// - `amqp`: AMQPPublisher (persistent, confirms, windows of `--window`) → quorum queue →
///   AMQPConsumer (prefetch `--prefetch`, one ack per message).
/// - `outbox`: the whole production path: outbox rows → OutboxRelay → AMQPConsumer →
///   MessageHandlers (inbox row per message, in a transaction) → ack.
@main
struct MessagingBenchmark: AsyncParsableCommand {
    enum Mode: String, ExpressibleByArgument { case amqp, outbox }

    @Option var mode: Mode = .amqp
    @Option var messages = 20_000
    @Option var window = 200
    @Option var prefetch = 16
    @Option var amqpURL = "amqp://orbitcove:orbitcove@127.0.0.1:55672/orbitcove_test"
    @Option var databaseURL = "postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove_test"

    func run() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        guard let url = URL(string: amqpURL) else { throw ValidationError("bad --amqp-url") }
        let settings = try AMQPSettings(url: url, connectionName: "orbitcove-bench")
        let queue = "bench-\(UUID.random().uuidString.prefix(8).lowercased())"
        let recorder = LatencyRecorder(expected: messages)
        let started = ContinuousClock.now
        switch mode {
        case .amqp:
            try await runAMQP(queue: queue, settings: settings, recorder: recorder, logger: logger)
        case .outbox:
            try await runOutbox(queue: queue, settings: settings, recorder: recorder, logger: logger)
        }
        let elapsed = recorder.finishedAt.map { $0 - started } ?? (ContinuousClock.now - started)
        try await AMQPProbe.deleteQueue(queue, settings: settings)
        try await AMQPProbe.deleteQueue(QueueTopology.deadLetterQueue(for: queue), settings: settings)
        for delay in RetryPolicy.standard.delays {
            try await AMQPProbe.deleteQueue(
                RetryPolicy.standard.holdQueue(for: queue, delay: delay), settings: settings)
        }
        print(recorder.summary(mode: mode.rawValue, elapsed: elapsed))
    }

    private func runAMQP(queue: String, settings: AMQPSettings, recorder: LatencyRecorder, logger: Logger) async throws
    {
        let topology = QueueTopology.forQueues(named: [queue])
        let publisher = AMQPPublisher(settings: settings, topology: topology, logger: logger)
        let consumer = AMQPConsumer(
            settings: settings, queue: queue, topology: topology, prefetch: prefetch, logger: logger
        ) { message in
            recorder.record(sentAt: message.body)
            return .ack
        }
        try await withServices([publisher, consumer], logger: logger) {
            try await publisher.check()
            var sent = 0
            while sent < messages {
                let batch = (sent..<min(sent + window, messages)).map { _ in
                    OutgoingMessage(
                        id: .random(), type: "bench.message", routingKey: queue, body: LatencyRecorder.stamp(),
                        headers: [:], appId: "bench")
                }
                let confirmed = try await publisher.publish(batch)
                guard confirmed.count == batch.count else { throw ValidationError("the broker refused messages") }
                sent += batch.count
            }
            await recorder.waitUntilDone()
        }
    }

    struct BenchPayload: MessagePayload {
        static let messageType = "bench.message"
        static let messageVersion = 1
        var sentAt: UInt64
    }

    private func runOutbox(
        queue: String, settings: AMQPSettings, recorder: LatencyRecorder, logger: Logger
    ) async throws {
        guard let url = URL(string: databaseURL) else { throw ValidationError("bad --database-url") }
        let database = try Database(url: url, maxConnections: 8, logger: logger)
        let publisher = AMQPPublisher(settings: settings, topology: .forQueues(named: [queue]), logger: logger)
        let relay = OutboxRelay(
            database: database, publisher: publisher, appId: "bench", batchSize: window, logger: logger)
        let worker = QueueWorker.make(
            queue: queue, consumer: "bench-\(queue)", database: database, settings: settings, prefetch: prefetch,
            logger: logger
        ) { handlers in
            handlers.on(BenchPayload.self) { envelope, _, _ in recorder.record(sentAt: envelope.data.sentAt) }
        }
        try await withServices([database.service(), publisher, relay] + worker.services, logger: logger) {
            var written = 0
            while written < messages {
                let count = min(window, messages - written)
                try await database.transaction { connection in
                    for _ in 0..<count {
                        let envelope = MessageEnvelope(
                            communityId: nil, actorId: nil, data: BenchPayload(sentAt: LatencyRecorder.now()))
                        try await Outbox.enqueue(envelope, toQueueNamed: queue, on: connection, logger: logger)
                    }
                }
                written += count
            }
            await recorder.waitUntilDone()
            try await database.client.query(
                "DELETE FROM inbox WHERE consumer = \("bench-\(queue)")", logger: logger)
            try await database.client.query("DELETE FROM outbox WHERE queue = \(queue)", logger: logger)
        }
    }
}

/// Runs `services` in a group around `body`, then shuts them down gracefully.
func withServices(
    _ services: [any Service], logger: Logger, _ body: @Sendable () async throws -> Void
) async throws {
    let group = ServiceGroup(configuration: .init(services: services.map { .init(service: $0) }, logger: logger))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        defer { tasks.cancelAll() }
        do {
            try await body()
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
    }
}

/// Latencies from a monotonic send stamp to consumption, and the moment the last arrived.
final class LatencyRecorder: Sendable {
    private struct State {
        var latencies: [UInt64] = []
        var finishedAt: ContinuousClock.Instant?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let expected: Int
    private let state = Mutex(State())

    init(expected: Int) {
        self.expected = expected
        state.withLock { $0.latencies.reserveCapacity(expected) }
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A 200-byte body starting with the send time in nanoseconds (as the C reference sends).
    static func stamp() -> [UInt8] {
        let text = String(now())
        return Array(text.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: max(0, 200 - text.utf8.count))
    }

    func record(sentAt body: [UInt8]) {
        let digits = body.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        record(sentAt: UInt64(String(decoding: digits, as: UTF8.self)) ?? 0)
    }

    func record(sentAt: UInt64) {
        let latency = Self.now() &- sentAt
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.latencies.append(latency)
            guard state.latencies.count == expected else { return nil }
            state.finishedAt = .now
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    var finishedAt: ContinuousClock.Instant? { state.withLock { $0.finishedAt } }

    func waitUntilDone() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.latencies.count >= expected { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }

    func summary(mode: String, elapsed: Duration) -> String {
        let sorted = state.withLock { $0.latencies }.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return String(
            format: "client=swift-%@ messages=%d seconds=%.2f throughput=%.0f p50_ms=%.2f p99_ms=%.2f", mode,
            sorted.count, seconds, Double(sorted.count) / seconds, percentile(0.5), percentile(0.99))
    }
}
