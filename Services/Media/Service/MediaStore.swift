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

    /// What marking an upload arrived came to.
    enum Marked: Equatable {
        /// Marked, and its processing queued.
        case marked
        /// No longer pending (the URL was used before, or the row went away).
        case notPending
        /// Its uploader is no longer in its community (left, removed, or the community deleted
        /// since the URL was given).
        case uploaderLeft
        /// Its uploader's account was deleted since.
        case accountDeleted
    }

    /// Marks an upload arrived and queues its processing, in one transaction, if it is still
    /// pending and its uploader still in its community (nothing is asked of an avatar's).
    func markUploaded(_ id: UUID) async throws -> Marked {
        try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                """
                WITH upload AS (
                    SELECT m.id, m.status = 'pending' AS pending,
                           EXISTS (SELECT 1 FROM users u WHERE u.id = m.uploaded_by AND u.deleted_at IS NULL) AS account,
                           m.community_id IS NULL OR EXISTS (
                               SELECT 1 FROM members mb JOIN communities c ON c.id = mb.community_id
                               WHERE mb.community_id = m.community_id AND mb.user_id = m.uploaded_by
                                 AND mb.left_at IS NULL AND c.deleted_at IS NULL) AS member
                    FROM media m WHERE m.id = \(id) AND m.deleted_at IS NULL
                    FOR UPDATE OF m
                ),
                marked AS (
                    UPDATE media SET status = 'uploaded', uploaded_at = now()
                    FROM upload u
                    WHERE media.id = u.id AND u.pending AND u.account AND u.member
                    RETURNING media.community_id, media.uploaded_by
                )
                SELECT m.community_id, m.uploaded_by, u.pending, u.account, u.member
                FROM upload u LEFT JOIN marked m ON true
                """, logger: logger)
            for try await row in rows {
                var cells = RowReader(row)
                let community: UUID? = try cells.next("community_id")
                let uploader: UUID? = try cells.next("uploaded_by")
                let (pending, account, member): (Bool, Bool, Bool) = (
                    try cells.next("pending"), try cells.next("account"), try cells.next("member")
                )
                guard pending else { return .notPending }
                guard account else { return .accountDeleted }
                guard member, let uploader else { return .uploaderLeft }
                try await Outbox.enqueue(
                    MessageEnvelope(communityId: community, actorId: uploader, data: MediaUploaded(mediaId: id)),
                    to: .mediaProcessing, on: connection, logger: logger)
                return .marked
            }
            return .notPending
        }
    }

    /// Soft-deletes as `user` on the write path; the sweep removes the row and its files. An
    /// avatar or icon the upload was is cleared in the same transaction (migration 0042), so
    /// what core caches of it (the community's row, the member lists showing the avatar) is
    /// retired after the commit.
    func delete(
        _ row: MediaRow, as user: UUID, writes: CommunityWrites, request: RequestFacts
    ) async throws -> Bool {
        let id = row.media.id
        let statement: PostgresQuery =
            "UPDATE media SET deleted_at = now() WHERE id = \(id) AND deleted_at IS NULL RETURNING 1"
        guard let community = row.media.communityId else {
            return try await writes.accountChange(of: user, request: request) { account, connection in
                let touched = try await connection.changedRows(statement, logger: logger)
                account.touched(touched)
                account.showsInMemberLists()
                return touched > 0
            }
        }
        return try await writes.change(in: community, by: user, request: request) { change, connection in
            let touched = try await connection.changedRows(statement, logger: logger)
            change.touched(touched)
            change.audit(
                "media.deleted", target: ("media", id), metadata: ["purpose": .string(row.media.purpose.rawValue)])
            if row.media.purpose == .communityIcon { change.invalidatesCache() }
            return touched > 0
        }
    }

    /// Queues an upload's key for the sweep again (a file written after it was swept).
    func discardUpload(_ id: UUID) async throws {
        try await database.transaction(scope: .system) { connection in
            try await Self.discard([MediaKeys.upload(id)], upload: id, on: connection, logger: logger)
        }
    }

    // MARK: The worker's records, in the inbox's transaction

    static let processedColumns = "community_id, uploaded_by, purpose, status, failure_reason"

    /// `uploaded` → `ready` with its renditions; `nil` when the row is no longer waiting for
    /// them (deleted meanwhile, or recorded by an earlier delivery).
    static func recordReady(
        _ id: UUID, width: Int, height: Int, renditions: [String: MediaRendition], on connection: PostgresConnection,
        logger: Logger
    ) async throws -> MediaProcessed? {
        let variants = String(decoding: try JSONCoding.encoder.encode(renditions), as: UTF8.self)
        return try await processed(
            id,
            """
            UPDATE media SET status = 'ready', width = \(width > 0 ? width : nil), height = \(height > 0 ? height : nil),
                   variants = \(variants)::jsonb, thumbnail_path = \(renditions["thumb/jpeg"]?.key), processed_at = now()
            WHERE id = \(id) AND status = 'uploaded' AND deleted_at IS NULL
            RETURNING \(unescaped: processedColumns)
            """, on: connection, logger: logger)
    }

    /// `uploaded` → `failed` with its reason; `nil` as for ``recordReady(_:width:height:renditions:on:logger:)``.
    static func recordFailed(
        _ id: UUID, reason: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> MediaProcessed? {
        try await processed(
            id,
            """
            UPDATE media SET status = 'failed', failure_reason = \(reason), processed_at = now()
            WHERE id = \(id) AND status = 'uploaded' AND deleted_at IS NULL
            RETURNING \(unescaped: processedColumns)
            """, on: connection, logger: logger)
    }

    private static func processed(
        _ id: UUID, _ update: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> MediaProcessed? {
        for try await row in try await connection.query(update, logger: logger) {
            var cells = RowReader(row)
            let community: UUID? = try cells.next("community_id")
            let uploader: UUID = try cells.next("uploaded_by")
            let purpose: String = try cells.next("purpose")
            let status: String = try cells.next("status")
            return MediaProcessed(
                mediaId: id, communityId: community, uploadedBy: uploader,
                purpose: MediaPurpose(rawValue: purpose) ?? .post, status: MediaStatus(rawValue: status) ?? .failed,
                failureReason: try cells.next("failure_reason"))
        }
        return nil
    }

    static func isReady(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT 1 FROM media WHERE id = \(id) AND status = 'ready' AND deleted_at IS NULL", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Queues files for the sweep to remove. `upload`: `keys` hold that media's upload key, whose
    /// URL may still be used until it expires, so the sweep removes it again until then
    /// (`media_discard`, migration 0043).
    static func discard(
        _ keys: [String], upload: UUID? = nil, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.run(
            """
            SELECT media_discard(\(keys)::text[], \(upload.map(MediaKeys.upload)),
                                 (SELECT upload_expires_at FROM media WHERE id = \(upload)))
            """, logger: logger)
    }
}
