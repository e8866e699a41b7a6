import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A user's notification history, read and marked under their own row-level security.
struct NotificationStore: Sendable {
    let database: Database
    let logger: Logger

    static let notFound = APIError.notFound("NOTIFICATION_NOT_FOUND", "No such notification")
    /// The types this build can show: a newer replica may write a type an older one does not
    /// know yet, and a page must not end early because of it.
    static let knownTypes = NotificationType.allCases.map(\.rawValue)

    struct Filter {
        var unreadOnly = false
        var communityId: UUID? = nil
    }

    /// Newest first.
    static let order = Keyset(.newestFirst)

    func page(for userId: UUID, _ filter: Filter, page: PageRequest) async throws -> [NotificationRecord] {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT id, community_id, type::text, title, body, data::text, read_at, created_at
                FROM notifications
                WHERE user_id = \(userId)
                  AND type::text = ANY(\(Self.knownTypes))
                  AND (\(!filter.unreadOnly) OR read_at IS NULL)
                  AND (\(filter.communityId)::uuid IS NULL OR community_id = \(filter.communityId))
                \(page: page, in: Self.order)
                """, logger: logger)
            return try await Self.records(rows)
        }
    }

    func unreadCount(for userId: UUID, in communityId: UUID?) async throws -> Int {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT count(*)::int FROM notifications
                WHERE user_id = \(userId) AND read_at IS NULL
                  AND (\(communityId)::uuid IS NULL OR community_id = \(communityId))
                """, logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }
    }

    /// Marks one notification read (again is fine: it keeps its first read time).
    func markRead(_ id: UUID, for userId: UUID) async throws -> NotificationRecord {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                UPDATE notifications SET read_at = coalesce(read_at, NOW())
                WHERE id = \(id) AND user_id = \(userId)
                RETURNING id, community_id, type::text, title, body, data::text, read_at, created_at
                """, logger: logger)
            guard let record = try await Self.records(rows).first else { throw Self.notFound }
            return record
        }
    }

    /// Marks every unread notification read, or those of one community; how many it marked.
    func markAllRead(for userId: UUID, in communityId: UUID?) async throws -> Int {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                WITH marked AS (
                    UPDATE notifications SET read_at = NOW()
                    WHERE user_id = \(userId) AND read_at IS NULL
                      AND (\(communityId)::uuid IS NULL OR community_id = \(communityId))
                    RETURNING 1
                )
                SELECT count(*)::int FROM marked
                """, logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }
    }

    private static func records(_ rows: PostgresRowSequence) async throws -> [NotificationRecord] {
        var records: [NotificationRecord] = []
        for try await row in rows {
            let columns = row.makeRandomAccess()
            // Written by this service from a typed link: data that does not decode is a bug, but
            // one row must not hide the rest of the history.
            let data = try columns["data"].decode(String.self)
            guard let type = NotificationType(rawValue: try columns["type"].decode(String.self)) else { continue }
            records.append(
                NotificationRecord(
                    id: try columns["id"].decode(UUID.self),
                    communityId: try columns["community_id"].decode(UUID?.self), type: type,
                    title: try columns["title"].decode(String.self), body: try columns["body"].decode(String.self),
                    data: (try? JSONCoding.decoder.decode([String: JSONValue].self, from: Data(data.utf8))) ?? [:],
                    readAt: try columns["read_at"].decode(Date?.self),
                    createdAt: try columns["created_at"].decode(Date.self)))
        }
        return records
    }
}
