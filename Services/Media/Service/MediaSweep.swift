import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// Fails what processing never finished (a day after the upload: its message was
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

    /// How long an uploaded file may wait for its processing before it is failed: long past any
    /// retry's backoff, so only a job lost for good (dead-lettered) or an outage of a day ends so.
    static let processingDeadline = "24 hours"

    /// One round: the rows, then the garbage a batch at a time until it is empty or the round
    /// has taken `roundSeconds` (deleting an image queues up to six keys, so one batch a round
    /// could fall behind); returns the files removed.
    @discardableResult
    func sweep(roundSeconds: Int = 30) async throws -> Int {
        try await sweepRows()
        let deadline = ContinuousClock.now + .seconds(roundSeconds)
        var total = 0
        while true {
            let (read, removed) = try await sweepGarbage()
            total += removed
            guard read == batch, removed > 0, ContinuousClock.now < deadline else { return total }
        }
    }

    private func sweepRows() async throws {
        try await database.transaction(scope: .system) { connection in
            var stale: [UUID] = []
            let rows = try await connection.query(
                """
                UPDATE media SET status = 'failed', failure_reason = 'processing did not finish', processed_at = now()
                WHERE status = 'uploaded' AND uploaded_at < now() - \(Self.processingDeadline)::interval
                RETURNING id
                """, logger: logger)
            for try await id in rows.decode(UUID.self) { stale.append(id) }
            for id in stale {
                try await MediaStore.discard(
                    [MediaKeys.upload(id)] + MediaProcessor.renditionKeys(of: id), upload: id, on: connection,
                    logger: logger)
            }
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
    }

    /// One batch of garbage: (rows read, files removed).
    private func sweepGarbage() async throws -> (Int, Int) {
        // Each garbage row as read (its `xmin`: queuing a key again makes a new version).
        let queued = try await database.transaction(scope: .system) { connection in
            var queued: [(key: String, version: String)] = []
            let rows = try await connection.query(
                """
                SELECT storage_key, xmin::text FROM media_garbage WHERE queued_at <= now()
                ORDER BY queued_at LIMIT \(batch)
                """, logger: logger)
            for try await (key, version) in rows.decode((String, String).self) { queued.append((key, version)) }
            return queued
        }
        var removed: [String] = []
        var versions: [String] = []
        for (key, version) in queued {
            do {
                try await objects.delete(key: key)
                removed.append(key)
                versions.append(version)
            } catch {
                logger.warning(
                    "could not remove a stored file; the next sweep tries again",
                    metadata: ["key": .string(key), "error": .string(logDescription(of: error))])
            }
        }
        guard !removed.isEmpty else { return (queued.count, 0) }
        // A row queued again meanwhile stays for the next round. An upload whose URL may still
        // be used is looked at again in five minutes (or when its URL expires), at the back.
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                """
                WITH swept AS (
                    SELECT g.storage_key, g.recheck_until FROM media_garbage g
                    JOIN unnest(\(removed)::text[], \(versions)::text[]) AS r(key, version)
                      ON g.storage_key = r.key AND g.xmin::text = r.version
                ), forgotten AS (
                    DELETE FROM media_garbage g USING swept
                    WHERE g.storage_key = swept.storage_key AND coalesce(swept.recheck_until < now(), TRUE)
                )
                UPDATE media_garbage g SET queued_at = least(swept.recheck_until, now() + interval '5 minutes')
                FROM swept WHERE g.storage_key = swept.storage_key AND swept.recheck_until >= now()
                """, logger: logger)
        }
        return (queued.count, removed.count)
    }
}
