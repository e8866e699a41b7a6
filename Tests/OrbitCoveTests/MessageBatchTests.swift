import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization
import Testing

/// Messages of a batched type (`MessageHandlers.onBatch`) that arrive together share one
/// transaction, and each is still applied exactly once: a message that can never be applied
/// fails alone (the others of its batch are applied, it is dead-lettered), a message delivered
/// twice is applied once, and a batch's writes commit or roll back together with its inbox rows.
/// Real broker and database.
@Suite struct MessageBatchTests {
    struct Tally: MessagePayload {
        static let messageType = "test.tally"
        static let messageVersion = 1
        var note: String
    }

    @Test func messagesArrivingTogetherShareATransactionAndEachIsAppliedOnce() async throws {
        let queue = "test-\(UUID().uuidString.prefix(8).lowercased())"
        let settings = try TestEnvironment.amqpSettings()
        let retry = RetryPolicy(delays: [.milliseconds(100)], maxAttempts: 2)
        let batches = Mutex<[[String]]>([])
        let table = "tally_\(queue.dropFirst(5))"
        defer { Task { try? await deleteScratchQueue(queue, settings: settings, retry: retry) } }
        try await Self.owner(
            "CREATE TABLE \(table) (note text NOT NULL); GRANT SELECT, INSERT ON \(table) TO orbitcove_app")
        defer { Task { try? await Self.owner("DROP TABLE \(table)") } }
        try await withTestDatabase { database in
            let worker = QueueWorker.make(
                queue: queue, consumer: "test-\(queue)", database: database, settings: settings, retry: retry,
                logger: TestEnvironment.logger
            ) { handlers in
                handlers.onBatch(Tally.self) { envelopes, connection, logger in
                    let notes = envelopes.map(\.data.note)
                    batches.withLock { $0.append(notes) }
                    try await connection.run(
                        "INSERT INTO \(unescaped: table) SELECT unnest(\(notes)::text[])", logger: logger)
                    // The first batch takes a moment, so what is published meanwhile queues behind it.
                    if batches.withLock({ $0.count }) == 1 { try await Task.sleep(for: .milliseconds(300)) }
                    if notes.contains("poison") { throw MessageValidationError("poison is never applied") }
                }
            }
            let publisher = AMQPPublisher(
                settings: settings, topology: .forQueues(named: [queue], retry: retry), logger: TestEnvironment.logger)
            try await withServices(worker.services + [publisher]) {
                var messages = try (0..<30).map { try Self.message("m\($0)", to: queue) }
                messages.insert(try Self.message("poison", to: queue), at: 12)
                // The same message delivered again, next to the first: into the same batch.
                messages.insert(messages[3], at: 4)
                _ = try await publisher.publish([messages[0]])
                try await Task.sleep(for: .milliseconds(50))
                _ = try await publisher.publish(Array(messages.dropFirst()))
                #expect(
                    try await eventually {
                        try await AMQPProbe.depth(of: QueueTopology.deadLetterQueue(for: queue), settings: settings)
                            .messages == 1
                    })
                #expect(try await eventually { try await Self.notes(in: table, database) == 30 })
                try await Task.sleep(for: .milliseconds(300))
            }
            let applied = try await Self.noteCounts(in: table, database)
            #expect(applied.count == 30 && applied.values.allSatisfy { $0 == 1 }, "\(applied)")
            #expect(applied["poison"] == nil)
            let seen = batches.withLock { $0 }
            // Messages published together went together, and the poisoned batch was split up.
            #expect(seen.contains { $0.count > 1 && !$0.contains("poison") }, "\(seen)")
            #expect(seen.contains(["poison"]), "\(seen)")
            // The message delivered twice into one batch was handed over once.
            #expect(seen.contains { $0.contains("m3") && $0.count > 1 }, "\(seen)")
            #expect(seen.allSatisfy { Set($0).count == $0.count }, "\(seen)")
        }
    }

    /// Which failures of a batch are the moment's (all its messages retried later, together)
    /// and which may be one message's (the batch split up), on PostgreSQL's own errors.
    @Test func aBatchIsSplitOnlyForFailuresAMessageCanCause() async throws {
        // A table of this test's own to hold a lock on, so no other test's consumer waits.
        let table = "locked_\(UUID().uuidString.prefix(8).lowercased())"
        try await Self.owner("CREATE TABLE \(table) (id int); GRANT SELECT ON \(table) TO orbitcove_app")
        defer { Task { try? await Self.owner("DROP TABLE \(table)") } }
        try await withTestDatabase { database in
            func failure(_ sql: String, statementTimeout: String = "5s") async -> any Error {
                do {
                    try await database.transaction(scope: .system) { connection in
                        try await connection.run(
                            """
                            SELECT set_config('lock_timeout', '100ms', true),
                                   set_config('statement_timeout', \(statementTimeout), true)
                            """, logger: TestEnvironment.logger)
                        try await connection.run(PostgresQuery(unsafeSQL: sql), logger: TestEnvironment.logger)
                    }
                } catch { return error }
                Issue.record("\(sql) did not fail")
                return CancellationError()
            }
            // A statement timeout, and a lock not granted in time (another transaction holds it).
            #expect(Database.isPassing(await failure("SELECT pg_sleep(1)", statementTimeout: "50ms")))
            // Waited for, not slept on: under the whole suite the lock took longer than a guess.
            let locked = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                defer { locked.continuation.finish() }
                try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                    try await owner.transaction(scope: .system) { connection in
                        try await connection.run(
                            "LOCK TABLE \(unescaped: table) IN ACCESS EXCLUSIVE MODE", logger: TestEnvironment.logger)
                        locked.continuation.yield()
                        try await Task.sleep(for: .seconds(2))
                    }
                }
            }
            var lockIterator = locked.stream.makeAsyncIterator()
            try #require(await lockIterator.next() != nil)
            #expect(Database.isPassing(await failure("SELECT count(*) FROM \(table)")))
            try await holder.value
            // What a message's content causes: a value that does not parse, a broken constraint.
            #expect(!Database.isPassing(await failure("SELECT 'not a uuid'::uuid")))
            #expect(
                !Database.isPassing(await failure("INSERT INTO inbox (consumer, message_id) VALUES (NULL, NULL)"))
            )
            #expect(
                !Database.isPassing(DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "x"))))
            #expect(Database.isPassing(Database.unavailable))
        }
    }

    /// Runs `sql` as the tables' owner (the services' role may not create tables).
    static func owner(_ sql: String) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            for statement in sql.split(separator: ";") {
                _ = try await owner.systemQuery(PostgresQuery(unsafeSQL: String(statement)))
            }
        }
    }

    static func message(_ note: String, to queue: String) throws -> OutgoingMessage {
        let envelope = MessageEnvelope(communityId: nil, actorId: nil, data: Tally(note: note))
        return OutgoingMessage(
            id: envelope.id, type: Tally.messageType, routingKey: queue,
            body: Array(try JSONCoding.encoder.encode(envelope)),
            headers: [:], appId: "tests")
    }

    static func notes(in table: String, _ database: Database) async throws -> Int {
        try await noteCounts(in: table, database).values.reduce(0, +)
    }

    static func noteCounts(in table: String, _ database: Database) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try await database.systemQuery(
            "SELECT note, count(*)::int FROM \(unescaped: table) GROUP BY note")
        {
            let (note, count) = try row.decode((String, Int).self)
            counts[note] = count
        }
        return counts
    }
}
