import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization
import Testing

/// Failed messages wait in hold queues and come back; poison and exhausted ones land in the
/// dead-letter queue with their reason, and replay sends them back. Real broker and database.
@Suite struct RetryAndDeadLetterTests {
    struct Ping: MessagePayload {
        static let messageType = "test.ping"
        static let messageVersion = 1
        var note: String
    }

    struct HandlerFailure: Error, CustomStringConvertible {
        var description: String { "the handler is unhappy" }
    }

    static let quickRetry = RetryPolicy(delays: [.milliseconds(200), .milliseconds(400)], maxAttempts: 3)

    /// A worker on a scratch queue whose handler for `Ping` is `handle` (given the attempt number).
    func withWorker(
        heartbeatSeconds: Int = 10,
        handle: @escaping @Sendable (Int) throws -> Void,
        _ body: @Sendable (_ queue: String, _ settings: AMQPSettings, _ publisher: AMQPPublisher) async throws -> Void
    ) async throws {
        let queue = "test-\(UUID().uuidString.prefix(8).lowercased())"
        var amqp = try TestEnvironment.amqpSettings()
        amqp.heartbeatSeconds = heartbeatSeconds
        let settings = amqp
        let calls = Mutex(0)
        do {
            try await withTestDatabase { database in
                let worker = QueueWorker.make(
                    queue: queue, consumer: "test-\(queue)", database: database, settings: settings,
                    retry: Self.quickRetry, logger: TestEnvironment.logger
                ) { handlers in
                    handlers.on(Ping.self) { _, _, _ in
                        let attempt = calls.withLock {
                            $0 += 1
                            return $0
                        }
                        try handle(attempt)
                    }
                }
                let publisher = AMQPPublisher(
                    settings: settings, topology: .forQueues(named: [queue], retry: Self.quickRetry),
                    logger: TestEnvironment.logger)
                try await withServices(worker.services + [publisher]) { try await body(queue, settings, publisher) }
            }
        } catch {
            try? await deleteScratchQueue(queue, settings: settings, retry: Self.quickRetry)
            throw error
        }
        try await deleteScratchQueue(queue, settings: settings, retry: Self.quickRetry)
    }

    func ping(to queue: String) throws -> OutgoingMessage {
        let envelope = MessageEnvelope(communityId: nil, actorId: nil, data: Ping(note: "hello"))
        return OutgoingMessage(
            id: envelope.id, type: Ping.messageType, routingKey: queue,
            body: Array(try JSONCoding.encoder.encode(envelope)),
            headers: ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"], appId: "tests")
    }

    func deadLetters(_ queue: String, _ settings: AMQPSettings) async throws -> Int {
        try await AMQPProbe.depth(of: QueueTopology.deadLetterQueue(for: queue), settings: settings).messages
    }

    @Test func aPassingFailureIsRetriedAfterADelayAndProcessedOnce() async throws {
        let attempts = Mutex<[ContinuousClock.Instant]>([])
        try await withWorker(handle: { attempt in
            attempts.withLock { $0.append(.now) }
            if attempt == 1 { throw HandlerFailure() }
        }) { queue, settings, publisher in
            let message = try ping(to: queue)
            #expect(try await publisher.publish([message]) == [message.id])
            #expect(try await eventually { attempts.withLock { $0.count } == 2 })
            try await Task.sleep(for: .milliseconds(600))
            #expect(attempts.withLock { $0.count } == 2)
            #expect(try await deadLetters(queue, settings) == 0)
        }
        let times = attempts.withLock { $0 }
        // The second attempt waited in the 200 ms hold queue.
        #expect(times.count == 2 && times[1] - times[0] >= .milliseconds(190))
    }

    /// The worker's retry publisher sits idle between failures; the broker drops a connection
    /// that misses two heartbeats. A failure after such a pause must still go through the hold
    /// queue (with its delay), not straight back to the work queue.
    @Test func aFailureAfterAnIdlePauseStillWaitsInTheHoldQueue() async throws {
        let attempts = Mutex<[ContinuousClock.Instant]>([])
        try await withWorker(
            heartbeatSeconds: 1,
            handle: { call in
                attempts.withLock { $0.append(.now) }
                // Calls count across messages: each message fails once, then succeeds.
                if call % 2 == 1 { throw HandlerFailure() }
            }
        ) { queue, settings, publisher in
            // A first failure opens the retry publisher's connection; then everything idles.
            let first = try ping(to: queue)
            _ = try await publisher.publish([first])
            #expect(try await eventually { attempts.withLock { $0.count } == 2 })
            try await Task.sleep(for: .seconds(4))
            attempts.withLock { $0.removeAll() }

            let second = try ping(to: queue)
            _ = try await publisher.publish([second])
            #expect(try await eventually { attempts.withLock { $0.count } == 2 })
            #expect(try await deadLetters(queue, settings) == 0)
        }
        let times = attempts.withLock { $0 }
        #expect(times.count == 2 && times[1] - times[0] >= .milliseconds(190))
    }

    @Test func aMessageThatAlwaysFailsIsDeadLetteredWithItsReasonAndCanBeReplayed() async throws {
        let succeed = Mutex(false)
        let calls = Mutex(0)
        try await withWorker(handle: { _ in
            calls.withLock { $0 += 1 }
            if !succeed.withLock({ $0 }) { throw HandlerFailure() }
        }) { queue, settings, publisher in
            let message = try ping(to: queue)
            _ = try await publisher.publish([message])
            #expect(try await eventually { try await deadLetters(queue, settings) == 1 })
            #expect(calls.withLock { $0 } == Self.quickRetry.maxAttempts)

            let letters = try await DeadLetters.list(queue: queue, limit: 10, settings: settings)
            let letter = try #require(letters.first)
            #expect(letters.count == 1)
            #expect(letter.messageId == message.id.lowercasedString)
            #expect(letter.type == Ping.messageType && letter.attempts == 3)
            #expect(letter.reason?.hasPrefix("failed 3 times; last error:") == true)
            #expect(letter.reason?.contains("the handler is unhappy") == true)
            #expect(letter.headers["traceparent"] == .string("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
            // Listing leaves the message where it was.
            #expect(try await deadLetters(queue, settings) == 1)

            succeed.withLock { $0 = true }
            let replayed = try await DeadLetters.replay(queue: queue, settings: settings) { _ in true }
            #expect(replayed == 1)
            #expect(try await eventually { calls.withLock { $0 } == Self.quickRetry.maxAttempts + 1 })
            #expect(try await deadLetters(queue, settings) == 0)
        }
    }

    @Test func poisonMessagesGoStraightToTheDeadLetterQueue() async throws {
        let calls = Mutex(0)
        try await withWorker(handle: { _ in calls.withLock { $0 += 1 } }) { queue, settings, publisher in
            var notJSON = try ping(to: queue)
            notJSON.body = Array("this is not json".utf8)
            var unknownType = try ping(to: queue)
            unknownType.body = Array(
                #"{"id":"\#(unknownType.id)","type":"test.unknown","version":1,"occurredAt":"2026-01-01T00:00:00Z","data":{}}"#
                    .utf8)
            var badPayload = try ping(to: queue)
            badPayload.body = Array(
                #"{"id":"\#(badPayload.id)","type":"test.ping","version":1,"occurredAt":"2026-01-01T00:00:00Z","data":{"note":5}}"#
                    .utf8)
            _ = try await publisher.publish([notJSON, unknownType, badPayload])
            #expect(try await eventually { try await deadLetters(queue, settings) == 3 })
            let letters = try await DeadLetters.list(queue: queue, limit: 10, settings: settings)
            let reasons = Dictionary(uniqueKeysWithValues: letters.map { ($0.messageId ?? "", $0.reason ?? "") })
            #expect(reasons[notJSON.id.lowercasedString]?.hasPrefix("not a message envelope") == true)
            #expect(reasons[unknownType.id.lowercasedString] == "no handler for test.unknown version 1")
            #expect(reasons[badPayload.id.lowercasedString]?.hasPrefix("payload does not decode") == true)
            #expect(letters.allSatisfy { $0.attempts == 1 })
            #expect(calls.withLock { $0 } == 0)

            // Replay picks only the matching message; still poison, it comes straight back.
            let target = unknownType.id.lowercasedString
            let replayed = try await DeadLetters.replay(queue: queue, settings: settings) { $0.messageId == target }
            #expect(replayed == 1)
            #expect(
                try await eventually {
                    let again = try await DeadLetters.list(queue: queue, limit: 10, settings: settings)
                    return again.count == 3 && again.last?.messageId == target
                })
            #expect(try await DeadLetters.purge(queue: queue, settings: settings) == 3)
            #expect(try await eventually { try await deadLetters(queue, settings) == 0 })
        }
    }
}

@Suite struct InboxPrunerTests {
    @Test func onlyOldEntriesOfItsOwnConsumerAreForgotten() async throws {
        try await withTestDatabase { database in
            let consumer = "prune-\(UUID().uuidString.prefix(8))"
            let (old, recent, otherConsumers) = (UUID(), UUID(), UUID())
            try await database.systemQuery(
                """
                INSERT INTO inbox (consumer, message_id, message_type, processed_at) VALUES
                    (\(consumer), \(old), 'test', NOW() - INTERVAL '31 days'),
                    (\(consumer), \(recent), 'test', NOW() - INTERVAL '1 day'),
                    (\(consumer + "-other"), \(otherConsumers), 'test', NOW() - INTERVAL '31 days')
                """)
            let pruner = InboxPruner(database: database, consumer: consumer, logger: TestEnvironment.logger)
            #expect(try await pruner.prune() == 1)
            let left = try await count(
                "SELECT count(*)::int FROM inbox WHERE message_id = ANY(\([old, recent, otherConsumers]))", in: database
            )
            #expect(left == 2)
            try await database.systemQuery(
                "DELETE FROM inbox WHERE consumer LIKE \(consumer + "%")")
        }
    }
}

@Suite struct TraceContextTests {
    @Test func aValidParentKeepsItsTraceWithANewSpan() throws {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let child = TraceContext.child(of: parent, requestId: "whatever")
        let parsed = try #require(TraceContext.parse(child))
        #expect(parsed.traceId == "0af7651916cd43dd8448eb211c80319c")
        #expect(parsed.spanId != "b7ad6b7169203331")
    }

    @Test func withoutAParentTheGatewaysRequestIdBecomesTheTraceId() throws {
        let requestId = "4bf92f3577b34da6a3ce929d0e0e4736"
        #expect(
            try #require(TraceContext.parse(TraceContext.child(of: nil, requestId: requestId))).traceId == requestId)
        let invalid = TraceContext.child(
            of: "00-00000000000000000000000000000000-b7ad6b7169203331-01", requestId: "r-1")
        let fresh = try #require(TraceContext.parse(invalid))
        #expect(fresh.traceId != "00000000000000000000000000000000")
    }

    @Test(arguments: [
        "", "junk", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-XYZ-b7ad6b7169203331-01",
    ])
    func malformedValuesAreNotParents(_ value: String) {
        #expect(TraceContext.parse(value) == nil)
    }
}
