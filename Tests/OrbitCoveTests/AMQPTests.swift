import Foundation
import OrbitCoveInfra
import Synchronization
import Testing

/// Against the real broker, each test on throwaway queues of the production shape.
@Suite struct AMQPTests {
    @Test func declaringTheTopologyTwiceIsHarmless() async throws {
        try await withScratchQueue { queue, settings in
            let topology = QueueTopology.forQueues(named: [queue])
            let publisher = AMQPPublisher(settings: settings, topology: topology, logger: TestEnvironment.logger)
            try await withServices([publisher]) {
                try await publisher.check()
                try await AMQPProbe.check(settings)
                let again = AMQPPublisher(settings: settings, topology: topology, logger: TestEnvironment.logger)
                try await withServices([again]) { try await again.check() }
            }
            #expect(try await AMQPProbe.depth(of: queue, settings: settings).messages == 0)
        }
    }

    /// Each failure path of opening a connection once freed the connection state twice.
    @Test func failingToConnectOrLogInIsAnErrorNotACrash() async throws {
        let closedPort = try #require(
            URL(string: "amqp://orbitcove:orbitcove@127.0.0.1:\(try freePort())/orbitcove_test"))
        await #expect(throws: AMQPError.self) {
            try await AMQPProbe.check(try AMQPSettings(url: closedPort, connectionName: "tests"))
        }
        var wrongPassword = try TestEnvironment.amqpSettings()
        wrongPassword.password = "not-the-password"
        await #expect(throws: AMQPError.self) { try await AMQPProbe.check(wrongPassword) }
    }

    @Test func publishedMessagesAreConfirmedDeliveredAndAcked() async throws {
        try await withScratchQueue { queue, settings in
            let messages = (0..<50).map { index in
                OutgoingMessage(
                    id: UUID(), type: "test.message", routingKey: queue, body: Array("{\"n\":\(index)}".utf8),
                    headers: [
                        "traceparent": "00-\(String(repeating: "a", count: 32))-\(String(repeating: "b", count: 16))-01"
                    ],
                    appId: "tests")
            }
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            let received = Mutex<[IncomingMessage]>([])
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]), prefetch: 8,
                logger: TestEnvironment.logger
            ) { message in
                received.withLock { $0.append(message) }
                return .ack
            }
            try await withServices([publisher, consumer]) {
                let confirmed = try await publisher.publish(messages)
                #expect(confirmed == Set(messages.map(\.id)))
                #expect(try await eventually { received.withLock { $0.count } == messages.count })
                #expect(try await eventually { try await AMQPProbe.depth(of: queue, settings: settings).messages == 0 })
            }
            let got = received.withLock { $0 }
            #expect(Set(got.compactMap(\.messageId)) == Set(messages.map { $0.id.lowercasedString }))
            #expect(
                got.allSatisfy {
                    $0.type == "test.message"
                        && $0.headers["traceparent"] == .string(messages[0].headers["traceparent"]!)
                })
            #expect(Set(got.map { String(decoding: $0.body, as: UTF8.self) }) == Set((0..<50).map { "{\"n\":\($0)}" }))
        }
    }

    @Test func rejectedMessagesAreDeadLettered() async throws {
        try await withScratchQueue { queue, settings in
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]),
                logger: TestEnvironment.logger
            ) { _ in .reject }
            try await withServices([publisher, consumer]) {
                _ = try await publisher.publish([message(to: queue)])
                #expect(
                    try await eventually {
                        try await AMQPProbe.depth(of: QueueTopology.deadLetterQueue(for: queue), settings: settings)
                            .messages == 1
                    })
            }
            #expect(try await AMQPProbe.depth(of: queue, settings: settings).messages == 0)
        }
    }

    @Test func aMessageThatKeepsFailingIsDeadLetteredAfterTheDeliveryLimit() async throws {
        try await withScratchQueue { queue, settings in
            let attempts = Mutex(0)
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]),
                logger: TestEnvironment.logger
            ) { _ in
                attempts.withLock { $0 += 1 }
                return .retry
            }
            try await withServices([publisher, consumer]) {
                _ = try await publisher.publish([message(to: queue)])
                #expect(
                    try await eventually {
                        try await AMQPProbe.depth(of: QueueTopology.deadLetterQueue(for: queue), settings: settings)
                            .messages == 1
                    })
            }
            // RabbitMQ 3.10 dead-letters once the count of returns exceeds the limit.
            #expect(attempts.withLock { $0 } == Int(QueueTopology.deliveryLimit) + 1)
        }
    }

    /// Handlers run on the consumer's thread (its task executor), yet one that awaits does not
    /// hold up the others: up to `prefetch` are in flight at once, never more.
    @Test func handlersThatAwaitRunConcurrentlyUpToThePrefetch() async throws {
        try await withScratchQueue { queue, settings in
            struct Counts {
                var inFlight = 0
                var most = 0
                var done = 0
            }
            let counts = Mutex(Counts())
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]), prefetch: 4,
                logger: TestEnvironment.logger
            ) { _ in
                counts.withLock {
                    $0.inFlight += 1
                    $0.most = max($0.most, $0.inFlight)
                }
                try? await Task.sleep(for: .milliseconds(300))
                counts.withLock {
                    $0.inFlight -= 1
                    $0.done += 1
                }
                return .ack
            }
            try await withServices([publisher, consumer]) {
                _ = try await publisher.publish((0..<12).map { _ in message(to: queue) })
                #expect(try await eventually { counts.withLock { $0.done } == 12 })
            }
            #expect(counts.withLock { $0.most } == 4)
            #expect(try await eventually { try await AMQPProbe.depth(of: queue, settings: settings).messages == 0 })
        }
    }

    @Test func gracefulShutdownFinishesWorkInFlightAndReturnsTheRest() async throws {
        try await withScratchQueue { queue, settings in
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            try await withServices([publisher]) {
                _ = try await publisher.publish((0..<10).map { _ in message(to: queue) })
            }
            let started = Mutex(0)
            let finished = Mutex(0)
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]), prefetch: 4,
                logger: TestEnvironment.logger
            ) { _ in
                started.withLock { $0 += 1 }
                try? await Task.sleep(for: .milliseconds(400))
                finished.withLock { $0 += 1 }
                return .ack
            }
            try await withServices([consumer]) {
                let someStarted = try await eventually { started.withLock { $0 } >= 1 }
                #expect(someStarted)
            }
            // Everything started was finished and acked; everything else is back in the queue.
            let done = finished.withLock { $0 }
            #expect(done == started.withLock { $0 })
            #expect(done >= 1 && done < 10)
            #expect(
                try await eventually { try await AMQPProbe.depth(of: queue, settings: settings).messages == 10 - done })
        }
    }

    /// An idle consumer's thread waits on its socket and wake pipe until something arrives or
    /// half a heartbeat interval passes: it does not turn every few milliseconds for nothing, and
    /// what arrives still reaches it at once.
    @Test func anIdleConsumerWaitsInsteadOfTurning() async throws {
        try await withCountingConsumer(heartbeatSeconds: 10) { consumer, publish, received in
            let before = consumer.turns
            try await Task.sleep(for: .seconds(2))
            // Heartbeats every 10 s: in 2 s a timed-out wait, the broker's heartbeat, a turn or
            // two of start (a 20 ms wait turned about 100 times).
            #expect(consumer.turns - before <= 10)
            try await publish()
            #expect(try await eventually { received() == 1 })
        }
    }

    /// Waiting that long must still keep the connection: the broker closes one that misses two
    /// heartbeats, and rabbitmq-c sends them only when called. (The broker's own heartbeats
    /// wake the socket too, so this holds the connection, not the wait's timer alone.)
    @Test func anIdleConsumerKeepsItsConnectionThroughHeartbeats() async throws {
        try await withCountingConsumer(heartbeatSeconds: 1) { consumer, publish, received in
            try await Task.sleep(for: .seconds(5))
            try await publish()
            #expect(try await eventually { received() == 1 })
            #expect(consumer.sessions == 1)
        }
    }

    /// A consumer that counts what it acks on a scratch queue, with a publisher to it, both
    /// running and the consumer consuming when `body` starts.
    private func withCountingConsumer(
        heartbeatSeconds: Int,
        _ body:
            @Sendable (
                AMQPConsumer, _ publish: @Sendable () async throws -> Void, _ received: @Sendable () -> Int
            ) async throws -> Void
    ) async throws {
        try await withScratchQueue { queue, scratch in
            var settings = scratch
            settings.heartbeatSeconds = heartbeatSeconds
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger)
            let received = Mutex(0)
            let consumer = AMQPConsumer(
                settings: settings, queue: queue, topology: .forQueues(named: [queue]), logger: TestEnvironment.logger
            ) { _ in
                received.withLock { $0 += 1 }
                return .ack
            }
            try await withServices([publisher, consumer]) {
                #expect(try await eventually { consumer.isConsuming })
                try await body(
                    consumer, { _ = try await publisher.publish([message(to: queue)]) }, { received.withLock { $0 } })
                #expect(try await eventually { try await AMQPProbe.depth(of: queue, settings: scratch).messages == 0 })
            }
        }
    }
}

private func message(to queue: String) -> OutgoingMessage {
    OutgoingMessage(
        id: UUID(), type: "test.message", routingKey: queue, body: Array("{}".utf8), headers: [:], appId: "tests")
}

/// A fresh queue name (with its dead-letter queue), deleted after the test.
func withScratchQueue(_ body: @Sendable (String, AMQPSettings) async throws -> Void) async throws {
    let queue = "test-\(UUID().uuidString.prefix(8).lowercased())"
    let settings = try TestEnvironment.amqpSettings()
    do {
        try await body(queue, settings)
    } catch {
        try? await deleteScratchQueue(queue, settings: settings)
        throw error
    }
    try await deleteScratchQueue(queue, settings: settings)
}

/// Deletes a scratch queue with its dead-letter queue and the hold queues of `retry`.
func deleteScratchQueue(_ queue: String, settings: AMQPSettings, retry: RetryPolicy = .standard) async throws {
    try await AMQPProbe.deleteQueue(queue, settings: settings)
    try await AMQPProbe.deleteQueue(QueueTopology.deadLetterQueue(for: queue), settings: settings)
    for delay in retry.delays {
        try await AMQPProbe.deleteQueue(retry.holdQueue(for: queue, delay: delay), settings: settings)
    }
}
