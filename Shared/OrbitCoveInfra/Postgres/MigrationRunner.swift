import Crypto
import Foundation
import Logging
import PostgresNIO

/// A numbered SQL file: `0001_extensions_and_enums.sql` is version 1.
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String

    /// SHA-256 of the file's bytes: an applied migration whose file changed is refused.
    package var checksum: String {
        SHA256.hexDigest(of: sql)
    }

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Reads `NNNN_name.sql` files from a folder, in version order.
    package static func load(from directory: URL) throws -> [Migration] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
        var migrations: [Migration] = []
        for file in files {
            let stem = file.deletingPathExtension().lastPathComponent
            guard let separator = stem.firstIndex(of: "_"), let version = Int(stem[..<separator]), version > 0 else {
                throw MigrationError.badFileName(file.lastPathComponent)
            }
            let sql = try String(contentsOf: file, encoding: .utf8)
            migrations.append(Migration(version: version, name: stem, sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (earlier, later) in zip(migrations, migrations.dropFirst()) where earlier.version == later.version {
            throw MigrationError.duplicateVersion(later.version)
        }
        return migrations
    }

    /// The migrations shipped with this build.
    package static func bundled() throws -> [Migration] {
        guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw MigrationError.missingBundle
        }
        return try load(from: directory)
    }
}

package enum MigrationError: Error, Equatable, CustomStringConvertible {
    case badFileName(String)
    case duplicateVersion(Int)
    case missingBundle
    case edited(version: Int, name: String)
    case unknownApplied(version: Int, name: String)
    case failed(version: Int, name: String, reason: String)

    package var description: String {
        switch self {
        case .badFileName(let name): "migration file \(name) is not named NNNN_name.sql"
        case .duplicateVersion(let version): "two migration files have version \(version)"
        case .missingBundle: "the bundled Migrations folder is missing"
        case .edited(let version, let name):
            "migration \(name) (version \(version)) was edited after it was applied; add a new migration instead"
        case .unknownApplied(let version, let name):
            "the database has migration \(name) (version \(version)) that this build does not know; refusing to run an older build's migrations"
        case .failed(let version, let name, let reason):
            "migration \(name) (version \(version)) failed and was rolled back: \(reason)"
        }
    }
}

/// Applies pending migrations in order, each in its own transaction together with its
/// `schema_migrations` row. An advisory lock keeps two runners from racing.
package struct MigrationRunner: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Any 64-bit constant works; every runner must use the same one.
    static let lockKey: Int64 = 0x4F52_4249_5443_4F56  // "ORBITCOV"

    package init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    package struct Applied: Sendable, Equatable {
        package let version: Int
        package let name: String
        package let checksum: String
    }

    /// Returns the versions it applied; verifies every already-applied file first.
    @discardableResult
    package func migrate(_ migrations: [Migration]) async throws -> [Int] {
        try await client.withConnection { connection in
            // Lock first: two runners creating the bookkeeping table at once collide in the catalog.
            try await connection.run("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                try await connection.run(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version INTEGER PRIMARY KEY,
                        name VARCHAR(200) NOT NULL,
                        checksum CHAR(64) NOT NULL,
                        applied_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
                    )
                    """, logger: logger)
                let result = try await apply(migrations, on: connection)
                try await connection.run("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return result
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    package func applied() async throws -> [Applied] {
        try await client.withConnection { try await appliedRows(on: $0) }
    }

    private func apply(_ migrations: [Migration], on connection: PostgresConnection) async throws -> [Int] {
        let applied = Dictionary(uniqueKeysWithValues: try await appliedRows(on: connection).map { ($0.version, $0) })
        let known = Set(migrations.map(\.version))
        if let stray = applied.values.sorted(by: { $0.version < $1.version }).first(where: {
            !known.contains($0.version)
        }) {
            throw MigrationError.unknownApplied(version: stray.version, name: stray.name)
        }
        for migration in migrations {
            if let record = applied[migration.version], record.checksum != migration.checksum {
                throw MigrationError.edited(version: migration.version, name: migration.name)
            }
        }
        var newlyApplied: [Int] = []
        for migration in migrations where applied[migration.version] == nil {
            let started = ContinuousClock.now
            do {
                try await connection.inTransaction(logger: logger) { transaction in
                    for statement in SQLScript.statements(in: migration.sql) {
                        try await transaction.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await transaction.run(
                        """
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """, logger: logger)
                }
            } catch {
                throw MigrationError.failed(
                    version: migration.version, name: migration.name, reason: Self.serverMessage(of: error))
            }
            logger.info(
                "migration applied",
                metadata: [
                    "migration": .string(migration.name), "elapsed": .stringConvertible(ContinuousClock.now - started),
                ])
            newlyApplied.append(migration.version)
        }
        return newlyApplied
    }

    /// What PostgreSQL said, without the query's bound values.
    private static func serverMessage(of error: any Error) -> String {
        if let psqlError = error as? PSQLError, let message = psqlError.serverInfo?[.message] {
            return message
        }
        return String(describing: error)
    }

    private func appliedRows(on connection: PostgresConnection) async throws -> [Applied] {
        let bookkeeping = try await connection.query(
            "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
        for try await exists in bookkeeping.decode(Bool.self) where !exists {
            return []
        }
        let rows = try await connection.query(
            "SELECT version, name, checksum FROM schema_migrations ORDER BY version", logger: logger)
        var result: [Applied] = []
        for try await (version, name, checksum) in rows.decode((Int, String, String).self) {
            result.append(Applied(version: version, name: name, checksum: checksum))
        }
        return result
    }
}
