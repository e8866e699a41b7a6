import ArgumentParser
import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

struct BrokerOptions: ParsableArguments {
    @Option(name: .customLong("amqp-url"), help: "The broker (default: $ORBITCOVE_AMQP_URL or the local stack's).")
    var url: String?

    func settings() throws -> AMQPSettings {
        let raw =
            url ?? OrbitCoveInfra.Environment().string("ORBITCOVE_AMQP_URL", default: ServiceSettings.defaultAMQPURL)
        guard let parsed = URL(string: raw) else { throw ValidationError("not a URL: \(raw)") }
        return try AMQPSettings(url: parsed, connectionName: "orbitcove-admin")
    }
}

/// A work queue named on the command line: one of ours, or (for tests and odd jobs) any name.
struct QueueArgument: ParsableArguments {
    @Argument(help: "The work queue: notifications, media-processing or reminders.")
    var queue: String
}

struct Queues: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Messages and consumers of every queue, its dead-letter queue and its retry hold queues.")

    @OptionGroup var broker: BrokerOptions

    func run() async throws {
        let settings = try broker.settings()
        print("queue".padding(toLength: 36, withPad: " ", startingAt: 0) + "messages  consumers")
        for queue in QueueName.allCases.map(\.rawValue) {
            let names =
                [queue, QueueTopology.deadLetterQueue(for: queue)]
                + RetryPolicy.standard.delays.map { RetryPolicy.standard.holdQueue(for: queue, delay: $0) }
            for name in names {
                let depth = try await AMQPProbe.depth(of: name, settings: settings)
                print(
                    name.padding(toLength: 36, withPad: " ", startingAt: 0)
                        + String(depth.messages).leftPadded(8) + String(depth.consumers).leftPadded(11))
            }
        }
    }
}

struct DeadLetterCommands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "Inspect, replay or purge a queue's dead letters.",
        subcommands: [List.self, Show.self, Replay.self, Purge.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead letters with their reasons.")
        @OptionGroup var broker: BrokerOptions
        @OptionGroup var target: QueueArgument
        @Option(help: "At most this many.") var limit = 50

        func run() async throws {
            let letters = try await DeadLetters.list(queue: target.queue, limit: limit, settings: broker.settings())
            if letters.isEmpty { print("No dead letters in \(QueueTopology.deadLetterQueue(for: target.queue)).") }
            for letter in letters {
                print(
                    [
                        letter.messageId ?? "-", letter.type ?? "-", "attempts=\(letter.attempts)",
                        letter.deadLetteredAt ?? "-", letter.reason ?? "-",
                    ].joined(separator: "  "))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one dead letter: headers and body.")
        @OptionGroup var broker: BrokerOptions
        @OptionGroup var target: QueueArgument
        @Argument(help: "The message id.") var messageId: String

        func run() async throws {
            let letters = try await DeadLetters.list(queue: target.queue, limit: 10_000, settings: broker.settings())
            guard let letter = letters.first(where: { $0.messageId == messageId.lowercased() }) else {
                throw ValidationError("no dead letter \(messageId) in \(target.queue)")
            }
            print("message id: \(letter.messageId ?? "-")\ntype:       \(letter.type ?? "-")")
            print("reason:     \(letter.reason ?? "-")\nattempts:   \(letter.attempts)")
            for (name, value) in letter.headers.sorted(by: { $0.key < $1.key }) { print("header \(name): \(value)") }
            print(String(decoding: letter.body, as: UTF8.self))
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send dead letters back to their queue, as first attempts.",
            discussion: "Choose exactly one of --id, --type and --all.")
        @OptionGroup var broker: BrokerOptions
        @OptionGroup var target: QueueArgument
        @Option(help: "Replay the message with this id.") var id: String?
        @Option(help: "Replay every message of this type.") var type: String?
        @Flag(help: "Replay every dead letter.") var all = false

        func validate() throws {
            guard [id != nil, type != nil, all].filter({ $0 }).count == 1 else {
                throw ValidationError("choose exactly one of --id, --type and --all")
            }
        }

        func run() async throws {
            let (id, type) = (self.id?.lowercased(), self.type)
            let replayed = try await DeadLetters.replay(
                queue: target.queue, limit: id == nil ? .max : 1, settings: broker.settings()
            ) { letter in
                if let id { return letter.messageId == id }
                if let type { return letter.type == type }
                return true
            }
            print("Replayed \(replayed) message(s) to \(target.queue).")
        }
    }

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete every dead letter of a queue.")
        @OptionGroup var broker: BrokerOptions
        @OptionGroup var target: QueueArgument
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() async throws {
            let deadLetterQueue = QueueTopology.deadLetterQueue(for: target.queue)
            if !yes {
                print(
                    "This deletes every message in \(deadLetterQueue). Type the queue name to confirm: ", terminator: ""
                )
                guard readLine()?.trimmingCharacters(in: .whitespaces) == target.queue else {
                    throw ValidationError("not confirmed; nothing deleted")
                }
            }
            let purged = try await DeadLetters.purge(queue: target.queue, settings: broker.settings())
            print("Deleted \(purged) message(s) from \(deadLetterQueue).")
        }
    }
}

struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox", abstract: "The outbox backlog: unpublished messages and the oldest one's age.")

    @Option(
        name: .customLong("database-url"),
        help: "The database (default: $ORBITCOVE_DATABASE_URL or the local stack's).")
    var url: String?

    func run() async throws {
        let raw =
            url
            ?? OrbitCoveInfra.Environment().string(
                "ORBITCOVE_DATABASE_URL", default: ServiceSettings.defaultDatabaseURL)
        guard let parsed = URL(string: raw) else { throw ValidationError("not a URL: \(raw)") }
        let logger = Logger(label: "orbitcove-admin")
        let database = try Database(url: parsed, logger: logger)
        let status = try await withThrowingTaskGroup(of: OutboxStatus?.self) { group in
            group.addTask {
                await database.client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await OutboxStatus.read(from: database, logger: logger)
        }
        let age = status.oldestUnpublishedAge.map { String(format: "%.1f s", $0) } ?? "-"
        print("unpublished: \(status.unpublished)\noldest unpublished: \(age)")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

struct DefinitionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "definitions",
        abstract: "Print the broker topology as a RabbitMQ definitions file (deploy/rabbitmq/definitions.json).")

    @Option(help: "The virtual host the definitions are for.") var vhost = "orbitcove"

    func run() throws {
        print(try BrokerDefinitions.json(vhost: vhost), terminator: "")
    }
}
