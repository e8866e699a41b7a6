import Foundation
import Logging
import OrbitCoveInfra
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

    /// One history row per recipient, written by one statement whatever the audience's size.
    static func tell(
        _ audience: Audience, community: UUID, title: String, body: String, subject: UUID?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        var data: [String: JSONValue] = ["communityId": .string(community.lowercasedString)]
        if let subject { data["userId"] = .string(subject.lowercasedString) }
        let json = String(decoding: try JSONCoding.encoder.encode(data), as: UTF8.self)
        let type = NotificationType.communityUpdate.rawValue
        switch audience {
        case .user(let userId):
            try await NotificationStore.record(
                userId: userId, communityId: community, type: .communityUpdate, title: title, body: body, data: data,
                on: connection, logger: logger)
        case .admins(let id, let except), .members(let id, let except):
            let adminsOnly = if case .admins = audience { true } else { false }
            try await connection.query(
                """
                INSERT INTO notifications (user_id, community_id, type, title, body, data)
                SELECT user_id, \(community), \(type)::notification_type, \(title), \(body), \(json)::jsonb
                FROM members
                WHERE community_id = \(id) AND left_at IS NULL AND user_id <> \(except)
                  AND (\(!adminsOnly) OR role = 'admin')
                """, logger: logger)
        }
    }
}
