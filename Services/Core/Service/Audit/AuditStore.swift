import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// A community's audit log as its admins read it, newest first (row-level security agrees).
struct AuditStore {
    let database: Database
    let logger: Logger

    func entries(
        of communityId: UUID, viewer: UUID, after cursor: PageCursor?, limit: Int
    ) async throws
        -> [(AuditEntry, PageCursor)]
    {
        try await database.transaction(userId: viewer) { connection in
            let rows = try await connection.query(
                """
                SELECT id, action, user_id, target_type, target_id, coalesce(metadata, '{}')::text, created_at
                FROM audit_log
                WHERE community_id = \(communityId)
                  AND (\(cursor == nil) OR (created_at, id) < (\(cursor?.exactCreatedAt ?? .unused), \(cursor?.id ?? .random())))
                ORDER BY created_at DESC, id DESC
                LIMIT \(limit)
                """, logger: logger)
            var page: [(AuditEntry, PageCursor)] = []
            for try await row in rows.decode((UUID, String, UUID, String?, UUID?, String, Date).self) {
                let metadata = (try? JSONCoding.decoder.decode([String: JSONValue].self, from: Data(row.5.utf8))) ?? [:]
                let entry = AuditEntry(
                    id: row.0, action: row.1, actorId: row.2, targetType: row.3, targetId: row.4, metadata: metadata,
                    createdAt: row.6)
                page.append((entry, PageCursor(createdAt: row.6, id: row.0)))
            }
            return page
        }
    }
}
