import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A user's notification history.
package struct NotificationStore: Sendable {
    let database: Database
    let logger: Logger

    /// Adds a history entry inside the caller's transaction (a message handler's).
    package static func record(
        userId: UUID, communityId: UUID?, type: NotificationType, title: String, body: String,
        data: [String: JSONValue], on connection: PostgresConnection, logger: Logger
    ) async throws {
        let json = String(decoding: try JSONCoding.encoder.encode(data), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO notifications (user_id, community_id, type, title, body, data)
            VALUES (\(userId), \(communityId), \(type.rawValue)::notification_type, \(title), \(body), \(json)::jsonb)
            """, logger: logger)
    }

    /// Newest first; `after` is the last entry of the previous page.
    package func page(
        for userId: UUID, after cursor: PageCursor?, limit: Int, unreadOnly: Bool
    ) async throws
        -> [NotificationRecord]
    {
        try await database.transaction(userId: userId) { connection in
            try await Self.page(
                for: userId, after: cursor, limit: limit, unreadOnly: unreadOnly, on: connection, logger: logger)
        }
    }

    private static func page(
        for userId: UUID, after cursor: PageCursor?, limit: Int, unreadOnly: Bool, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [NotificationRecord] {
        let rows = try await connection.query(
            """
            SELECT id, community_id, type::text, title, body, data::text, read_at, created_at
            FROM notifications
            WHERE user_id = \(userId)
              AND (\(!unreadOnly) OR read_at IS NULL)
              AND (\(cursor == nil) OR (created_at, id) < (\(cursor?.exactCreatedAt ?? .unused), \(cursor?.id ?? .random())))
            ORDER BY created_at DESC, id DESC
            LIMIT \(limit)
            """, logger: logger)
        var records: [NotificationRecord] = []
        for try await row in rows.decode((UUID, UUID?, String, String, String, String, Date?, Date).self) {
            let data = (try? JSONCoding.decoder.decode([String: JSONValue].self, from: Data(row.5.utf8))) ?? [:]
            guard let type = NotificationType(rawValue: row.2) else { continue }
            records.append(
                NotificationRecord(
                    id: row.0, communityId: row.1, type: type, title: row.3, body: row.4, data: data, readAt: row.6,
                    createdAt: row.7))
        }
        return records
    }
}
