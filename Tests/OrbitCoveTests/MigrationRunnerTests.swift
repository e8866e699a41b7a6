import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// Each test migrates a database of its own, made for it and dropped after.
@Suite struct MigrationRunnerTests {
    @Test func appliesEveryMigrationOnceAndInOrder() async throws {
        let migrations = try Migration.bundled()
        #expect(migrations.map(\.version) == Array(1...migrations.count))
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                let beforeAny = try await runner.applied()
                #expect(beforeAny.isEmpty)
                #expect(try await runner.migrate(migrations) == migrations.map(\.version))
                #expect(try await runner.migrate(migrations).isEmpty)
                let applied = try await runner.applied()
                #expect(applied.map(\.checksum) == migrations.map(\.checksum))

                let tables = try await count(
                    """
                    SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN (
                    'users','family_members','communities','members','invites','events','rsvps','posts','reactions',
                    'comments','poll_votes','transactions','splits','dues','dues_payments','media','notifications',
                    'audit_log','refresh_tokens','outbox','inbox')
                    """, in: database)
                #expect(tables == 21)
            }
        }
    }

    @Test func refusesWhenAnAppliedFileWasEdited() async throws {
        let migrations = try Migration.bundled()
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                try await runner.migrate(Array(migrations.prefix(3)))
                var edited = migrations
                edited[1] = Migration(version: 2, name: edited[1].name, sql: edited[1].sql + "\n-- tweak\n")
                await #expect(throws: MigrationError.edited(version: 2, name: edited[1].name)) {
                    try await runner.migrate(edited)
                }
                // Nothing after the refusal was applied.
                #expect(try await runner.applied().count == 3)
            }
        }
    }

    @Test func refusesToRunAnOlderBuildAgainstANewerSchema() async throws {
        let migrations = try Migration.bundled()
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                try await runner.migrate(Array(migrations.prefix(2)))
                await #expect(throws: MigrationError.unknownApplied(version: 2, name: migrations[1].name)) {
                    try await runner.migrate(Array(migrations.prefix(1)))
                }
            }
        }
    }

    @Test func concurrentRunnersApplyEachMigrationOnce() async throws {
        let migrations = try Migration.bundled()
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                async let first = runner.migrate(migrations)
                async let second = runner.migrate(migrations)
                let (a, b) = try await (first, second)
                #expect((a + b).sorted() == migrations.map(\.version))
            }
        }
    }

    @Test func aFailingMigrationLeavesNoTrace() async throws {
        let broken = [
            Migration(
                version: 1, name: "0001_broken", sql: "CREATE TABLE half (id INT);\nSELECT nonsense FROM nowhere;")
        ]
        try await withScratchDatabase { url in
            try await withTestDatabase(url: url) { database in
                let runner = MigrationRunner(client: database.client, logger: TestEnvironment.logger)
                await #expect(
                    throws: MigrationError.failed(
                        version: 1, name: "0001_broken", reason: #"relation "nowhere" does not exist"#)
                ) { try await runner.migrate(broken) }
                #expect(try await runner.applied().isEmpty)
                let tables = try await count(
                    "SELECT count(*)::int FROM information_schema.tables WHERE table_name = 'half'", in: database)
                #expect(tables == 0)
            }
        }
    }

    @Test func migrationFilesMustBeNumbered() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "SELECT 1;".write(to: folder.appendingPathComponent("first.sql"), atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.badFileName("first.sql")) { try Migration.load(from: folder) }
    }
}

/// The services' role owns nothing: it cannot change the schema or get around row-level security.
@Suite struct ApplicationRoleTests {
    @Test func applicationRoleCannotAlterTheSchema() async throws {
        try await withTestDatabase { database in
            await #expect(throws: PSQLError.self) {
                try await database.client.query("CREATE TABLE intruder (id INT)", logger: TestEnvironment.logger)
            }
            await #expect(throws: PSQLError.self) {
                try await database.client.query("ALTER TABLE users DISABLE TRIGGER ALL", logger: TestEnvironment.logger)
            }
            let bypass = try await count(
                "SELECT (rolbypassrls OR rolsuper)::int FROM pg_roles WHERE rolname = current_user", in: database)
            #expect(bypass == 0)
        }
    }
}

/// Creates an empty database owned by the schema owner, passes its URL, then drops it.
/// Copied from `template0`, which nobody connects to: `template1` is refused as a source
/// while anything (an autovacuum worker) is connected to it.
func withScratchDatabase(_ body: @Sendable (URL) async throws -> Void) async throws {
    let name = "scratch_\(UUID().uuidString.prefix(8).lowercased())"
    let owner = TestEnvironment.ownerDatabaseURL
    try await withTestDatabase(url: owner) { admin in
        try await admin.client.query(
            PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE template0"), logger: TestEnvironment.logger)
    }
    var components = try #require(URLComponents(url: owner, resolvingAgainstBaseURL: false))
    components.path = "/\(name)"
    do {
        try await body(try #require(components.url))
    } catch {
        try? await dropDatabase(name, via: owner)
        throw error
    }
    try await dropDatabase(name, via: owner)
}

/// `WITH (FORCE)` ends the test's own connections still closing, but the owner may not end
/// an autovacuum worker's (42501), and a plain drop waits only 5 s for one (55006): both are
/// tried again, for up to 30 s.
private func dropDatabase(_ name: String, via owner: URL) async throws {
    try await withTestDatabase(url: owner) { admin in
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                try await admin.client.query(
                    PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"),
                    logger: TestEnvironment.logger)
                return
            } catch let error as PSQLError
                where ["42501", "55006"].contains(error.serverInfo?[.sqlState]) && ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}
