import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Writes notices into history inside a message handler's transaction (system scope): one
/// `INSERT … SELECT` for every notice of every message the transaction handles, whatever the
/// audiences' sizes (the consumer handles the messages that arrive together in one transaction:
/// ``MessageHandlers/onBatch(_:_:)``). It reads each recipient's preferences (category
/// switched off or series muted: no row; push off, or no device for a push due now: no push;
/// quiet hours: the push waits) and skips anyone who already has a row for the message, so a
/// redelivered or replayed message writes nothing twice. Pushes due now are queued in the same
/// transaction; those waiting for quiet hours to end are queued by ``NotificationHousekeeping``.
struct HistoryWriter: Sendable {
    /// Most notification ids one push job carries.
    static let pushBatch = 1000
    /// What `notifications.title` holds: a longer title ("New in <community>: <event>") is cut,
    /// as PostgreSQL counts characters, rather than failing the message for everyone.
    static let titleLength = 200

    /// A message's notices: `occurredAt` is when its change happened (whoever joined the
    /// community after it is not told of it).
    struct MessageNotices: Sendable {
        var notices: [Notice]
        var message: UUID
        var occurredAt: Date
    }

    /// Every notice of `messages` in one statement, then their pushes.
    func write(_ messages: [MessageNotices], on connection: PostgresConnection, logger: Logger) async throws {
        let rows = messages.flatMap { message in
            message.notices.map { NoticeRow($0, message: message.message, occurredAt: message.occurredAt) }
        }.enumerated().map { ordinal, row in
            var row = row
            row.ordinal = ordinal
            return row
        }
        guard !rows.isEmpty else { return }
        let due = try await insert(rows, on: connection, logger: logger)
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

    /// The ids of the rows written whose push is due now. The notices travel as one JSON array;
    /// those naming their users find them by key, the others read their community's members.
    private func insert(_ rows: [NoticeRow], on connection: PostgresConnection, logger: Logger) async throws -> [UUID] {
        let notices = String(decoding: try JSONCoding.encoder.encode(rows), as: UTF8.self)
        let inserted = try await connection.query(
            """
            WITH notice AS (
                SELECT * FROM jsonb_to_recordset(\(notices)::jsonb) AS n(
                    ordinal int, message uuid, "occurredAt" timestamptz, community uuid, users uuid[],
                    "adminsOnly" boolean, "formerMembers" boolean, "except" uuid[], category text, series uuid,
                    type text, title text, body text, data jsonb, "collapseId" text)
            ), audience AS (
                SELECT n.*, m.user_id, m.left_at, m.role, m.joined_at, m.notification_prefs
                FROM notice n JOIN members m ON m.community_id = n.community AND m.user_id = ANY(n.users)
                WHERE n.users IS NOT NULL
                UNION ALL
                SELECT n.*, m.user_id, m.left_at, m.role, m.joined_at, m.notification_prefs
                FROM notice n JOIN members m ON m.community_id = n.community
                WHERE n.users IS NULL
            ), wanted AS (
                -- One notification per (message, person): a message's first notice naming them.
                SELECT DISTINCT ON (a.message, a.user_id)
                       a.*, notification_push_at(a.notification_prefs, a.category, NOW()) AS push_at
                FROM audience a
                WHERE (a.left_at IS NULL OR a."formerMembers")
                  AND (NOT a."adminsOnly" OR a.role = 'admin')
                  AND (a.users IS NOT NULL OR a.joined_at IS NULL OR a.joined_at <= a."occurredAt")
                  AND NOT (a.user_id = ANY(a."except"))
                  AND notification_wanted(a.notification_prefs, a.category, a.series)
                ORDER BY a.message, a.user_id, a.ordinal
            ), owed AS (
                -- A push due now is owed only to someone with a device to send it to; one held
                -- for quiet hours goes to the devices they have when the hours end.
                SELECT w.*,
                       CASE WHEN w.push_at > NOW() OR EXISTS (SELECT 1 FROM devices d WHERE d.user_id = w.user_id)
                           THEN w.push_at
                       END AS owed_at
                FROM wanted w
            )
            INSERT INTO notifications
                (user_id, community_id, type, title, body, data, message_id, push_at, push_queued, collapse_id)
            SELECT user_id, community, type::notification_type, left(title, \(Self.titleLength)::int), body, data,
                   message, owed_at, coalesce(owed_at <= NOW(), false), "collapseId"
            FROM owed
            ON CONFLICT (message_id, user_id) DO NOTHING
            RETURNING id, push_queued
            """, logger: logger)
        var due: [UUID] = []
        for try await (id, queued) in inserted.decode((UUID, Bool).self) where queued { due.append(id) }
        return due
    }
}

/// A notice as the writer's statement reads it: its audience as the filters on `members`.
private struct NoticeRow: Encodable {
    var ordinal = 0
    var message: UUID
    var occurredAt: Date
    var community: UUID
    var users: [UUID]?
    var adminsOnly: Bool
    var formerMembers: Bool
    var except: [UUID]
    var category: String
    var series: UUID?
    var type: String
    var title: String
    var body: String
    var data: [String: JSONValue]
    var collapseId: String?

    init(_ notice: Notice, message: UUID, occurredAt: Date) {
        let recipients = Recipients(notice.audience)
        self.message = message
        self.occurredAt = occurredAt
        community = notice.audience.community
        users = recipients.users
        adminsOnly = recipients.adminsOnly
        formerMembers = recipients.formerMembers
        except = recipients.except
        category = notice.type.category.rawValue
        series = notice.series
        type = notice.type.rawValue
        title = notice.title
        body = notice.body
        data = notice.link.data
        collapseId = notice.collapseId
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
