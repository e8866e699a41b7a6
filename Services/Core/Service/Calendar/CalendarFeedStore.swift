import Crypto
import Foundation
import Logging
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Calendar feeds: secret addresses a calendar app polls (it cannot send a bearer token), for
/// one community's events or all of a user's. Only the token's SHA-256 is kept; a revoked or
/// unknown token is a 404. The feed is built as its owner sees the calendar, under their
/// row-level security, so leaving a community takes its events out of every feed at once.
struct CalendarFeedStore: Sendable {
    let database: Database
    let events: EventRows
    let publicURL: String
    let logger: Logger

    /// How far back a feed reaches; everything later (and every series still running) is in it.
    static let history: TimeInterval = 90 * 86_400
    static let maxFeeds = 20
    static let notFound = APIError.notFound("FEED_NOT_FOUND", "No such calendar feed")

    func create(for user: UUID, community: UUID?) async throws -> CalendarFeed {
        let token = randomBytes(32).lowerHex
        return try await database.transaction(userId: user) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO calendar_feeds (user_id, community_id, token_hash)
                SELECT \(user), \(community), \(SHA256.hexDigest(of: token))
                WHERE (SELECT count(*) FROM calendar_feeds WHERE user_id = \(user) AND revoked_at IS NULL) < \(Self.maxFeeds)
                RETURNING id, created_at
                """, logger: logger)
            for try await (id, createdAt) in rows.decode((UUID, Date).self) {
                return CalendarFeed(
                    id: id, communityId: community, url: "\(publicURL)/api/v1/calendar/\(token).ics",
                    createdAt: createdAt, lastUsedAt: nil)
            }
            throw APIError(
                .conflict, code: "TOO_MANY_FEEDS",
                message: "You have \(Self.maxFeeds) calendar feeds; revoke one before making another")
        }
    }

    func feeds(of user: UUID) async throws -> [CalendarFeed] {
        try await database.transaction(userId: user) { connection in
            var feeds: [CalendarFeed] = []
            for try await (id, community, createdAt, lastUsed) in try await connection.query(
                """
                SELECT id, community_id, created_at, last_used_at FROM calendar_feeds
                WHERE user_id = \(user) AND revoked_at IS NULL ORDER BY created_at, id
                """, logger: logger
            ).decode((UUID, UUID?, Date, Date?).self) {
                feeds.append(
                    CalendarFeed(id: id, communityId: community, url: nil, createdAt: createdAt, lastUsedAt: lastUsed))
            }
            return feeds
        }
    }

    func revoke(_ feed: UUID, of user: UUID) async throws {
        let revoked = try await database.transaction(userId: user) { connection in
            try await connection.changedRows(
                """
                UPDATE calendar_feeds SET revoked_at = NOW()
                WHERE id = \(feed) AND user_id = \(user) AND revoked_at IS NULL RETURNING 1
                """, logger: logger)
        }
        guard revoked == 1 else { throw Self.notFound }
    }

    /// Whose feed a token opens, and for which community (nil: all of theirs).
    func owner(of token: String) async throws -> (user: UUID, community: UUID?) {
        let rows = try await database.systemQuery(
            """
            WITH feed AS (
                SELECT id, user_id, community_id, last_used_at FROM calendar_feeds
                WHERE token_hash = \(SHA256.hexDigest(of: token)) AND revoked_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = user_id AND u.deleted_at IS NOT NULL)
            ), used AS (
                UPDATE calendar_feeds SET last_used_at = NOW()
                WHERE id = (SELECT id FROM feed WHERE last_used_at IS NULL OR last_used_at < NOW() - INTERVAL '1 hour')
            )
            SELECT user_id, community_id FROM feed
            """)
        guard let row = rows.first else { throw Self.notFound }
        let (user, community) = try row.decode((UUID, UUID?).self)
        return (user, community)
    }

    /// The feed's version: it changes whenever anything in it could (an event, the calendar's
    /// name, the user's memberships or answers, the day its history starts), without reading it.
    /// Read as the system, with the user's memberships named in the query: it is the hot path
    /// of every poll, and row-level security would re-derive them for each table it touches.
    func version(for user: UUID, community: UUID?, now: Date = Date()) async throws -> String {
        try await database.transaction(scope: .system) { connection in
            let rows = try await connection.query(
                """
                SELECT count(*)::int, coalesce(string_agg(
                    c.id::text || '/' || c.updated_at::text || '/' ||
                    (SELECT coalesce(max(e.updated_at)::text, '') || '/' || count(*) FROM events e WHERE e.community_id = c.id),
                    ',' ORDER BY c.id), '') || '|' ||
                    coalesce((SELECT max(updated_at)::text || count(*) FROM rsvps WHERE user_id = \(user)), '')
                FROM members m JOIN communities c ON c.id = m.community_id
                WHERE m.user_id = \(user) AND m.left_at IS NULL AND c.deleted_at IS NULL
                  AND (\(community == nil) OR c.id = \(community ?? .random()))
                """, logger: logger)
            var fingerprint = ""
            for try await (communities, text) in rows.decode((Int, String?).self) {
                // A community feed whose owner left it (or which was deleted) is gone.
                if community != nil, communities == 0 { throw Self.notFound }
                fingerprint = text ?? ""
            }
            let day = Int(now.timeIntervalSince1970 / 86_400)
            return "\""
                + SHA256.hexDigest(of: "\(community?.lowercasedString ?? "all")|\(day)|\(fingerprint)")
                .prefix(32) + "\""
        }
    }

    /// The feed as RFC 5545 text.
    func calendar(for user: UUID, community: UUID?, now: Date = Date()) async throws -> String {
        try await database.transaction(userId: user) { connection in
            let horizon = now.addingTimeInterval(-Self.history)
            var names: [String] = []
            var communities: [UUID] = []
            for try await (id, name) in try await connection.query(
                """
                SELECT c.id, c.name FROM members m JOIN communities c ON c.id = m.community_id
                WHERE m.user_id = \(user) AND m.left_at IS NULL AND c.deleted_at IS NULL
                  AND (\(community == nil) OR c.id = \(community ?? .random()))
                ORDER BY c.name, c.id
                """, logger: logger
            ).decode((UUID, String).self) {
                communities.append(id)
                names.append(name)
            }
            guard community == nil || !communities.isEmpty else { throw Self.notFound }
            var rows: [EventRecord] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: EventRecord.columns) FROM events e
                WHERE e.community_id = ANY(\(communities)) AND e.deleted_at IS NULL
                  AND CASE
                      WHEN e.recurrence_parent_id IS NOT NULL THEN e.recurrence_id >= \(horizon) OR e.starts_at >= \(horizon)
                      WHEN e.recurrence_rule IS NOT NULL THEN e.recurrence_end IS NULL OR e.recurrence_end >= \(horizon)
                      ELSE coalesce(e.ends_at, e.starts_at) >= \(horizon)
                  END
                ORDER BY e.starts_at, e.id
                """, logger: logger)
            {
                rows.append(try events.decode(row))
            }
            var attending = Set<InstanceKey>()
            for try await (event, instance) in try await connection.query(
                """
                SELECT DISTINCT event_id, recurrence_id FROM rsvps WHERE user_id = \(user) AND status <> 'no'
                """, logger: logger
            ).decode((UUID, Date?).self) {
                attending.insert(InstanceKey(eventId: event, recurrenceId: instance))
            }
            let name = community == nil ? "OrbitCove" : names.first ?? "OrbitCove"
            return ICSCalendar(name: name, events: Self.components(rows, attending: attending)).serialized()
        }
    }

    /// VEVENTs: each single event and series master, then each override after its master.
    /// A cancelled event stays (cancelled) only for those who said they would come
    /// (`attending`: the instances the feed's owner, or a dependant, answered yes or maybe), and
    /// so does a removed instance, as the window read shows it: an EXDATE for everyone else,
    /// for them a RECURRENCE-ID component with STATUS:CANCELLED.
    static func components(_ rows: [EventRecord], attending: Set<InstanceKey>) -> [ICSEvent] {
        var overrides: [UUID: [EventRecord]] = [:]
        for row in rows {
            if let parent = row.parentId { overrides[parent, default: []].append(row) }
        }
        let answered = Set(attending.map(\.eventId))
        var events: [ICSEvent] = []
        for row in rows where !row.isOverride {
            if row.cancelled, !answered.contains(row.id) { continue }
            let expected = row.exceptionDates.filter {
                attending.contains(InstanceKey(eventId: row.id, recurrenceId: $0))
            }
            var master = component(row, uid: row.id, cancelled: row.cancelled)
            master.exceptionDates = row.exceptionDates.filter { !expected.contains($0) }
            events.append(master)
            for override in overrides[row.id] ?? [] {
                guard let start = override.recurrenceId, !row.exceptionDates.contains(start) else { continue }
                events.append(component(override, uid: row.id, cancelled: row.cancelled || override.cancelled))
            }
            for start in expected {
                var removed = component(row.generated(at: start), uid: row.id, cancelled: true)
                removed.recurrenceRule = nil
                removed.exceptionDates = []
                removed.recurrenceID = start
                events.append(removed)
            }
        }
        return events
    }

    private static func component(_ row: EventRecord, uid: UUID, cancelled: Bool) -> ICSEvent {
        var event = ICSEvent(
            uid: "\(uid.lowercasedString)@orbitcove", start: row.startsAt, end: row.endsAt ?? row.startsAt,
            timeZone: row.zone, isAllDay: row.allDay, summary: row.title, stamp: row.updatedAt)
        event.details = row.description
        event.location = [row.locationName, row.locationAddress].compactMap { $0 }.joined(separator: ", ")
        if let latitude = row.locationLat, let longitude = row.locationLng {
            event.geo = .init(latitude: latitude, longitude: longitude)
        }
        event.categories = [row.category.rawValue.uppercased()]
        event.recurrenceRule = row.rule
        event.exceptionDates = row.exceptionDates
        event.recurrenceID = row.recurrenceId
        event.sequence = row.sequence
        event.status = cancelled ? .cancelled : .confirmed
        event.created = row.createdAt
        event.lastModified = row.updatedAt
        return event
    }
}
