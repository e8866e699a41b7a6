import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Writes notices into history inside a message handler's transaction (system scope): one
/// `INSERT … SELECT` per notice whatever the audience's size, which reads each recipient's
/// preferences (category switched off or series muted: no row; push off, or no device for a
/// push due now: no push; quiet hours: the push waits) and skips anyone who already has a row
/// for this message, so a redelivered or replayed message writes nothing twice. Pushes due now
/// are queued in the same transaction; those waiting for quiet hours to end are queued by
/// ``NotificationHousekeeping``.
struct HistoryWriter: Sendable {
    /// Most notification ids one push job carries.
    static let pushBatch = 1000
    /// What `notifications.title` holds: a longer title ("New in <community>: <event>") is cut,
    /// as PostgreSQL counts characters, rather than failing the message for everyone.
    static let titleLength = 200

    /// `occurredAt` is when the message's change happened: whoever joined the community
    /// after it is not told of it.
    func write(
        _ notices: [Notice], for message: UUID, occurredAt: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        var due: [UUID] = []
        for notice in notices {
            due += try await insert(notice, for: message, occurredAt: occurredAt, on: connection, logger: logger)
        }
        try await Self.queuePushes(due, on: connection, logger: logger)
    }

    /// Queues push jobs for rows whose pushes are due, in batches.
    static func queuePushes(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws {
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(start + pushBatch, ids.count)])
            try await Outbox.enqueue(
                MessageEnvelope(communityId: nil, actorId: nil, data: PushDue(notificationIds: batch)),
                to: .notifications, on: connection, logger: logger)
            start += pushBatch
        }
    }

    /// The ids of the rows written whose push is due now.
    private func insert(
        _ notice: Notice, for message: UUID, occurredAt: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID] {
        let recipients = Recipients(notice.audience)
        let data = String(decoding: try JSONCoding.encoder.encode(notice.link.data), as: UTF8.self)
        let rows = try await connection.query(
            """
            WITH wanted AS (
                SELECT m.user_id, notification_push_at(m.notification_prefs, \(notice.type.category.rawValue), NOW()) AS push_at
                FROM members m
                WHERE m.community_id = \(notice.audience.community)
                  AND (m.left_at IS NULL OR \(recipients.formerMembers))
                  AND (\(recipients.users)::uuid[] IS NULL OR m.user_id = ANY(\(recipients.users)::uuid[]))
                  AND (NOT \(recipients.adminsOnly) OR m.role = 'admin')
                  AND (\(recipients.users)::uuid[] IS NOT NULL OR m.joined_at IS NULL OR m.joined_at <= \(occurredAt))
                  AND NOT (m.user_id = ANY(\(recipients.except)::uuid[]))
                  AND notification_wanted(m.notification_prefs, \(notice.type.category.rawValue), \(notice.series))
            ), owed AS (
                -- A push due now is owed only to someone with a device to send it to; one held
                -- for quiet hours goes to the devices they have when the hours end.
                SELECT user_id,
                       CASE WHEN push_at > NOW() OR EXISTS (SELECT 1 FROM devices d WHERE d.user_id = wanted.user_id)
                           THEN push_at
                       END AS push_at
                FROM wanted
            )
            INSERT INTO notifications
                (user_id, community_id, type, title, body, data, message_id, push_at, push_queued, collapse_id)
            SELECT user_id, \(notice.audience.community), \(notice.type.rawValue)::notification_type,
                   left(\(notice.title), \(Self.titleLength)::int),
                   \(notice.body), \(data)::jsonb, \(message), push_at, coalesce(push_at <= NOW(), false),
                   \(notice.collapseId)
            FROM owed
            ON CONFLICT (message_id, user_id) DO NOTHING
            RETURNING id, push_queued
            """, logger: logger)
        var due: [UUID] = []
        for try await (id, queued) in rows.decode((UUID, Bool).self) where queued { due.append(id) }
        return due
    }
}

/// An audience as the writer's statement filters members.
private struct Recipients {
    var users: [UUID]? = nil
    var adminsOnly = false
    var formerMembers = false
    var except: [UUID] = []

    init(_ audience: Audience) {
        switch audience {
        case .members(_, let except):
            self.except = except
        case .admins(_, let except):
            adminsOnly = true
            self.except = except
        case .users(let users, _, let except):
            self.users = users
            self.except = except
        case .person(let user, _):
            users = [user]
            formerMembers = true
        }
    }
}
