import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// Fails what processing never finished (an hour after the upload: its message was
/// dead-lettered, say, after the store kept refusing), so no row waits forever. Removes what
/// nobody may see any more: rows deleted by a member, uploads that never came
/// (an hour after their URL expired), failures older than 30 days; then the files of every
/// removed row (`media_garbage`, filled by the rows' delete trigger, also when a community's
/// deletion cascades to its media). A file is removed before its garbage row, so a sweep that
/// stops half-way leaves work for the next, never a file without a row naming it.
struct MediaSweep: Sendable {
    let database: Database
    let objects: any ObjectStore
    let logger: Logger
    /// Files removed per round, so one round stays short.
    var batch = 200

    /// One round; returns the files removed.
    @discardableResult
    func sweep() async throws -> Int {
        try await database.transaction(scope: .system) { connection in
            var stale: [UUID] = []
            let rows = try await connection.query(
                """
                UPDATE media SET status = 'failed', failure_reason = 'processing did not finish', processed_at = now()
                WHERE status = 'uploaded' AND uploaded_at < now() - interval '1 hour'
                RETURNING id
                """, logger: logger)
            for try await id in rows.decode(UUID.self) { stale.append(id) }
            let keys = stale.flatMap { [MediaKeys.upload($0)] + MediaProcessor.renditionKeys(of: $0) }
            if !keys.isEmpty { try await MediaStore.discard(keys, on: connection, logger: logger) }
        }
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                """
                DELETE FROM media
                WHERE deleted_at IS NOT NULL
                   OR (status = 'pending' AND upload_expires_at < now() - interval '1 hour')
                   OR (status = 'failed' AND processed_at < now() - interval '30 days')
                """, logger: logger)
        }
        let keys = try await database.transaction(scope: .system) { connection in
            var keys: [String] = []
            let rows = try await connection.query(
                "SELECT storage_key FROM media_garbage ORDER BY queued_at LIMIT \(batch)", logger: logger)
            for try await key in rows.decode(String.self) { keys.append(key) }
            return keys
        }
        var removed: [String] = []
        for key in keys {
            do {
                try await objects.delete(key: key)
                removed.append(key)
            } catch {
                logger.warning(
                    "could not remove a stored file; the next sweep tries again",
                    metadata: ["key": .string(key), "error": .string(logDescription(of: error))])
            }
        }
        guard !removed.isEmpty else { return 0 }
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                "DELETE FROM media_garbage WHERE storage_key = ANY(\(removed))", logger: logger)
        }
        return removed.count
    }
}
