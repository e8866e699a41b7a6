import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A community's uploads as sync sends them (the media service writes them; core serves sync):
/// a phone learns a photo it shows is `ready`, or `failed` and why, without asking. Deleted
/// ones are in `deleted`; an avatar belongs to no community and is in no sync.
enum MediaSync {
    static func kind() -> SyncKind {
        SyncKind(
            kind: "media", section: "media", as: Media.self,
            byId: { community, ids, connection, logger in
                try await media(
                    """
                    SELECT \(unescaped: MediaRows.columns) FROM media
                    WHERE community_id = \(community) AND deleted_at IS NULL AND id = ANY(\(ids))
                    ORDER BY id
                    """, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await media(
                    """
                    SELECT \(unescaped: MediaRows.columns) FROM media
                    WHERE community_id = \(community) AND deleted_at IS NULL
                      AND (\(after == nil) OR id > \(after ?? .random()))
                    ORDER BY id
                    LIMIT \(limit)
                    """, on: connection, logger: logger)
            })
    }

    private static func media(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, Media)] {
        var found: [(UUID, Media)] = []
        for try await row in try await connection.query(query, logger: logger) {
            let media = try MediaRows.read(row).media
            found.append((media.id, media))
        }
        return found
    }
}
