import ArgumentParser
import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// `orbitcove-admin`: what operators run next to the services.
package struct AdminCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "orbitcove-admin",
        abstract: "Operate an OrbitCove installation.",
        subcommands: [Migrate.self, Queues.self, DeadLetterCommands.self, OutboxCommand.self, DefinitionsCommand.self])

    package init() {}
}

struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: "Connect as the schema owner (default: $ORBITCOVE_MIGRATION_DATABASE_URL or the local stack's).")
    var url: String?

    func resolvedURL() throws -> URL {
        let env = OrbitCoveInfra.Environment()
        let raw =
            url ?? env.string("ORBITCOVE_MIGRATION_DATABASE_URL", default: ServiceSettings.defaultMigrationDatabaseURL)
        guard let url = URL(string: raw) else { throw ValidationError("not a URL: \(raw)") }
        return url
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply pending schema migrations, in order, each in its own transaction.",
        discussion: "Refuses to run when an applied migration's file was edited since.")

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "List applied and pending migrations without applying anything.")
    var status = false

    func run() async throws {
        var logger = Logger(label: "orbitcove-admin")
        logger.logLevel = .info
        let client = PostgresClient(
            configuration: try Database.configuration(from: database.resolvedURL()), backgroundLogger: logger)
        let migrations = try Migration.bundled()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let runner = MigrationRunner(client: client, logger: logger)
            if status {
                let applied = Set(try await runner.applied().map(\.version))
                for migration in migrations {
                    print("\(applied.contains(migration.version) ? "applied" : "pending")  \(migration.name)")
                }
            } else {
                let versions = try await runner.migrate(migrations)
                print(versions.isEmpty ? "Schema is up to date." : "Applied \(versions.count) migration(s).")
            }
        }
    }
}
