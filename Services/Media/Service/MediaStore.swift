import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The `media` table: created as the uploader under row-level security, read as the caller
/// (so a member of another community gets nothing), moved along its life by the system.
struct MediaStore: Sendable {
    let database: Database
    let logger: Logger

    /// A new `pending` row, written as its uploader (the wall checks they may).
    func create(
        id: UUID, by user: UUID, community: UUID?, purpose: MediaPurpose, filename: String, mimeType: String,
        size: Int, sha256: Data, uploadExpires: Date
    ) async throws -> MediaRow {
        let kind = mimeType == MediaType.pdf ? "document" : "image"
        let query: PostgresQuery = """
            INSERT INTO media (id, community_id, uploaded_by, type, filename, mime_type, size_bytes, storage_path,
                               purpose, checksum, upload_expires_at)
            VALUES (\(id), \(community), \(user), \(kind)::media_type, \(filename), \(mimeType), \(size),
                    \(MediaKeys.upload(id)), \(purpose.rawValue), decode(\(sha256.lowerHex), 'hex'), \(uploadExpires))
            RETURNING \(unescaped: MediaRows.columns)
            """
        return try await database.transaction(userId: user) { connection in
            for try await row in try await connection.query(query, logger: logger) { return try MediaRows.read(row) }
            throw MediaErrors.notFound
        }
    }

    /// The row as `user` may see it (none: another community's, deleted, or no such id).
    func find(_ id: UUID, as user: UUID) async throws -> MediaRow? {
        try await database.transaction(userId: user) { connection in
            try await Self.find(id, on: connection, logger: logger)
        }
    }

    /// The row whatever it is, for the system's own work (the upload check, the worker).
    func find(system id: UUID) async throws -> MediaRow? {
        try await database.transaction(scope: .system) { connection in
            try await Self.find(id, on: connection, logger: logger)
        }
    }

    static func find(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> MediaRow? {
        let rows = try await connection.query(
            "SELECT \(unescaped: MediaRows.columns) FROM media WHERE id = \(id) AND deleted_at IS NULL", logger: logger)
        for try await row in rows { return try MediaRows.read(row) }
        return nil
    }

    /// Marks an upload arrived and queues its processing, in one transaction; `false` when it
    /// was no longer pending (the URL was used before, or the row went away).
    func markUploaded(_ id: UUID) async throws -> Bool {
        try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                """
                UPDATE media SET status = 'uploaded', uploaded_at = now()
                WHERE id = \(id) AND status = 'pending' AND deleted_at IS NULL
                RETURNING community_id, uploaded_by
                """, logger: logger)
            var found: (UUID?, UUID)?
            for try await row in rows {
                var cells = RowReader(row)
                found = (try cells.next("community_id"), try cells.next("uploaded_by"))
            }
            guard let (community, uploader) = found else { return false }
            try await Outbox.enqueue(
                MessageEnvelope(communityId: community, actorId: uploader, data: MediaUploaded(mediaId: id)),
                to: .mediaProcessing, on: connection, logger: logger)
            return true
        }
    }

    /// Soft-deletes as `user`; the sweep removes the row and its files.
    func delete(_ id: UUID, as user: UUID) async throws -> Bool {
        try await database.transaction(userId: user) { connection in
            let rows = try await connection.query(
                "UPDATE media SET deleted_at = now() WHERE id = \(id) AND deleted_at IS NULL RETURNING 1",
                logger: logger)
            for try await _ in rows { return true }
            return false
        }
    }
}
