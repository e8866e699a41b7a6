import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// Notification history entries about a community's membership, for the people they concern.
/// Runs inside a message handler's transaction (system scope: it reads who belongs where).
enum CommunityNews {
    enum Audience {
        case user(UUID)
        case admins(of: UUID, except: UUID)
        case members(of: UUID, except: UUID)
    }

    static func tell(
        _ audience: Audience, community: UUID, title: String, body: String, subject: UUID?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        var data: [String: JSONValue] = ["communityId": .string(community.lowercasedString)]
        if let subject { data["userId"] = .string(subject.lowercasedString) }
        for userId in try await recipients(audience, on: connection, logger: logger) {
            try await NotificationStore.record(
                userId: userId, communityId: community, type: .communityUpdate, title: title, body: body, data: data,
                on: connection, logger: logger)
        }
    }

    private static func recipients(
        _ audience: Audience, on connection: PostgresConnection, logger: Logger
    )
        async throws -> [UUID]
    {
        let (community, excluded, adminsOnly): (UUID, UUID, Bool)
        switch audience {
        case .user(let userId): return [userId]
        case .admins(let id, let except): (community, excluded, adminsOnly) = (id, except, true)
        case .members(let id, let except): (community, excluded, adminsOnly) = (id, except, false)
        }
        let rows = try await connection.query(
            """
            SELECT user_id FROM members
            WHERE community_id = \(community) AND left_at IS NULL AND user_id <> \(excluded)
              AND (\(!adminsOnly) OR role = 'admin')
            """, logger: logger)
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }
}
