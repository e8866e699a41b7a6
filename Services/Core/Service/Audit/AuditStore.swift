import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A community's audit log as its admins read it, newest first (row-level security agrees).
struct AuditStore {
    let database: Database
    let logger: Logger

    static let order = Keyset(.newestFirst)

    func entries(of communityId: UUID, viewer: UUID, page: PageRequest) async throws -> [(AuditEntry, PageCursor)] {
        try await database.transaction(userId: viewer) { connection in
            let rows = try await connection.query(
                """
                SELECT id, action, user_id, target_type, target_id, coalesce(metadata, '{}')::text AS metadata,
                       created_at
                FROM audit_log
                WHERE community_id = \(communityId)
                \(page: page, in: Self.order)
                """, logger: logger)
            var entries: [(AuditEntry, PageCursor)] = []
            for try await row in rows {
                var cells = RowReader(row)
                let id: UUID = try cells.next("id")
                let action: String = try cells.next("action")
                let actorId: UUID = try cells.next("user_id")
                let targetType: String? = try cells.next("target_type")
                let targetId: UUID? = try cells.next("target_id")
                let metadata: String = try cells.next("metadata")
                let createdAt: Date = try cells.next("created_at")
                let entry = AuditEntry(
                    id: id, action: action, actorId: actorId, targetType: targetType, targetId: targetId,
                    metadata: (try? JSONCoding.decoder.decode([String: JSONValue].self, from: Data(metadata.utf8)))
                        ?? [:],
                    createdAt: createdAt)
                entries.append((entry, PageCursor(createdAt: createdAt, id: id)))
            }
            return entries
        }
    }
}
