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
        /// These members of the community (someone who left since hears nothing).
        case users([UUID], of: UUID)
    }

    /// One history row per recipient, written by one statement whatever the audience's size.
    static func tell(
        _ audience: Audience, community: UUID, type kind: NotificationType = .communityUpdate, title: String,
        body: String, subject: UUID?, link: [String: JSONValue] = [:], on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        var data: [String: JSONValue] = ["communityId": .string(community.lowercasedString)]
        if let subject { data["userId"] = .string(subject.lowercasedString) }
        data.merge(link) { _, new in new }
        let json = String(decoding: try JSONCoding.encoder.encode(data), as: UTF8.self)
        let type = kind.rawValue
        switch audience {
        case .user(let userId):
            try await NotificationStore.record(
                userId: userId, communityId: community, type: kind, title: title, body: body, data: data,
                on: connection, logger: logger)
        case .users(let users, let id):
            try await connection.query(
                """
                INSERT INTO notifications (user_id, community_id, type, title, body, data)
                SELECT user_id, \(community), \(type)::notification_type, \(title), \(body), \(json)::jsonb
                FROM members
                WHERE community_id = \(id) AND left_at IS NULL AND user_id = ANY(\(users))
                """, logger: logger)
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
