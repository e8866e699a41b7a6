import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// `GET /communities/{id}/sync?since=TOKEN` for every registered kind.
///
/// A sync token is the reader's MVCC snapshot (`pg_current_snapshot()`), not a time. Every
/// change to a synced row leaves a `change_log` row stamped with its transaction id; the next
/// sync returns the entities whose changes that snapshot could not see. A transaction still
/// running when the token was made is invisible to it, so its changes come with a later sync
/// however old its timestamps are: nothing committed concurrently is ever missed. Each read
/// runs in one REPEATABLE READ snapshot. Its cost follows the number of changes: the log is
/// read by `(community_id, txid)` from the token's xmin.
///
/// A first sync is paged: its first response carries the token (the snapshot taken before any
/// row was read) and `nextPage`; each later page is read in a fresh snapshot. A row changed
/// between pages may come twice (in a page and in the next incremental sync, which starts
/// from the first page's token), but none is missed.
package struct SyncEngine: Sendable {
    let database: Database
    let registry: SyncRegistry
    let pageSize: Int
    let logger: Logger

    package init(database: Database, registry: SyncRegistry, pageSize: Int = 500, logger: Logger) {
        self.database = database
        self.registry = registry
        self.pageSize = max(1, pageSize)
        self.logger = logger
    }

    /// Older tokens than this start over with a full sync: the change log keeps 90 days.
    package static let tokenLifetime: TimeInterval = 80 * 24 * 3600

    /// An incremental sync reads at most this many change-log entries; past them the answer is
    /// a full sync, paged, as for a token too old: a client that was away while its community
    /// changed a great deal (or one that sends a token it made up, naming a snapshot from long
    /// ago) costs a paged full sync, never one answer of every change. The stream does the
    /// same (`reset`).
    package static let mostChanges = 2_000

    package enum Request: Sendable {
        case full
        case since(SyncToken)
        case page(SyncPageToken)
    }

    package func sync(
        _ communityId: UUID, for granted: CommunityGate.Granted, _ request: Request
    ) async throws
        -> SyncResponse
    {
        try await database.transaction(scope: .user(granted.userId), isolation: .repeatableRead) { connection in
            var (snapshot, now) = ("", Date())
            for try await (text, time) in try await connection.query(
                "SELECT pg_current_snapshot()::text, NOW()", logger: logger
            ).decode((String, Date).self) {
                (snapshot, now) = (text, time)
            }
            guard let record = try await CommunityRecord.load(communityId, on: connection, logger: logger),
                record.deletedAt == nil
            else { throw CommunityGate.notFound }
            let community = record.community(role: granted.membership.role)
            let current = SyncToken(snapshot: snapshot, issuedAt: now)
            switch request {
            case .page(let position):
                return try await page(
                    communityId, from: position, token: position.token, community: nil, on: connection)
            case .since(let token)
            where now.timeIntervalSince(token.issuedAt) < Self.tokenLifetime
                && !Self.isAhead(token.snapshot, of: snapshot):
                if let response = try await changes(
                    communityId, since: token, next: current, community: community, on: connection)
                {
                    return response
                }
                return try await page(
                    communityId, from: SyncPageToken(token: current, kindIndex: 0, after: nil), token: current,
                    community: community, on: connection)
            case .full, .since:
                return try await page(
                    communityId, from: SyncPageToken(token: current, kindIndex: 0, after: nil), token: current,
                    community: community, on: connection)
            }
        }
    }

    /// Whether `token` is ahead of the database (``PostgresSnapshot/isAhead(of:)``): answered as
    /// a token too old is, with a full sync.
    static func isAhead(_ token: String, of current: String) -> Bool {
        guard let token = PostgresSnapshot(token), let current = PostgresSnapshot(current) else { return true }
        return token.isAhead(of: current)
    }

    /// What changed since `token`, or nil when more than ``mostChanges`` entries did.
    private func changes(
        _ communityId: UUID, since token: SyncToken, next: SyncToken, community: Community,
        on connection: PostgresConnection
    ) async throws -> SyncResponse? {
        var changed: [String: [UUID: Bool]] = [:]
        var communityChanged = false
        var entries = 0
        for try await (kind, entityId, inserted, count) in try await connection.query(
            Self.changes(in: communityId, since: token.snapshot, kinds: registry.kinds.map(\.kind)), logger: logger
        ).decode((String, UUID, Bool, Int).self) {
            entries += count
            if kind == "community" { communityChanged = true } else { changed[kind, default: [:]][entityId] = inserted }
        }
        guard entries <= Self.mostChanges else { return nil }
        var response = SyncResponse(
            community: communityChanged ? community : nil, sections: [:], sectionNames: registry.sectionNames,
            syncToken: next.text, full: false, nextPage: nil)
        for (kindName, entities) in changed {
            guard let kind = registry.kind(named: kindName) else { continue }
            let rows = try await kind.byId(communityId, Array(entities.keys), connection, logger)
            var section = ErasedSection()
            for (id, row) in rows {
                if entities[id] == true { section.created.append(row) } else { section.updated.append(row) }
            }
            let present = Set(rows.map(\.id))
            section.deleted = entities.keys.filter { !present.contains($0) }.sorted { $0.uuidString < $1.uuidString }
            response.sections[kind.section, default: ErasedSection()].merge(section)
        }
        return response
    }

    /// Up to `pageSize` rows from `position` on, kind after kind.
    private func page(
        _ communityId: UUID, from position: SyncPageToken, token: SyncToken, community: Community?,
        on connection: PostgresConnection
    ) async throws -> SyncResponse {
        var response = SyncResponse(
            community: community, sections: [:], sectionNames: registry.sectionNames, syncToken: token.text,
            full: position.kindIndex == 0 && position.after == nil, nextPage: nil)
        var (kindIndex, after, room) = (position.kindIndex, position.after, pageSize)
        while kindIndex < registry.kinds.count {
            let kind = registry.kinds[kindIndex]
            let rows = try await kind.page(communityId, after, room + 1, connection, logger)
            let taken = rows.prefix(room)
            response.sections[kind.section, default: ErasedSection()].created += taken.map(\.row)
            room -= taken.count
            if rows.count > taken.count || (room == 0 && kindIndex + 1 < registry.kinds.count) {
                let next =
                    rows.count > taken.count
                    ? SyncPageToken(token: token, kindIndex: kindIndex, after: taken.last?.id)
                    : SyncPageToken(token: token, kindIndex: kindIndex + 1, after: nil)
                response.nextPage = next.text
                return response
            }
            (kindIndex, after) = (kindIndex + 1, nil)
        }
        return response
    }

    /// The entities of `communityId` changed by transactions `snapshot` did not see, each once,
    /// with whether one of those changes created it and how many log entries name it, from at
    /// most ``mostChanges`` + 1 entries of the synced `kinds` and the community itself (so more
    /// than ``mostChanges`` in all means there were more). The entries the stream alone carries
    /// (answers, reactions, votes) do not count.
    package static func changes(in communityId: UUID, since snapshot: String, kinds: [String]) -> PostgresQuery {
        """
        SELECT entity_kind, entity_id, bool_or(operation = 'insert'), count(*)::int
        FROM (
            SELECT entity_kind, entity_id, operation FROM change_log
            WHERE community_id = \(communityId)
              AND txid >= pg_snapshot_xmin(\(snapshot)::pg_snapshot)
              AND NOT pg_visible_in_snapshot(txid, \(snapshot)::pg_snapshot)
              AND (entity_kind = 'community' OR entity_kind = ANY(\(kinds)::text[]))
            LIMIT \(mostChanges + 1)
        ) AS entries
        GROUP BY entity_kind, entity_id
        """
    }
}

/// A sync response: the community (when it changed, or on a first sync), a section per
/// kind, and the token for the next call; `nextPage` while a first sync has more to send.
package struct SyncResponse: Encodable, Sendable {
    package var community: Community?
    package var sections: [String: ErasedSection]
    let sectionNames: [String]
    package var syncToken: String
    package var full: Bool
    package var nextPage: String?

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        if let community {
            try container.encode(community, forKey: Key(stringValue: "community"))
        } else {
            try container.encodeNil(forKey: Key(stringValue: "community"))
        }
        for name in sectionNames {
            try container.encode(sections[name] ?? ErasedSection(), forKey: Key(stringValue: name))
        }
        try container.encode(syncToken, forKey: Key(stringValue: "syncToken"))
        try container.encode(full, forKey: Key(stringValue: "full"))
        if let nextPage {
            try container.encode(nextPage, forKey: Key(stringValue: "nextPage"))
        } else {
            try container.encodeNil(forKey: Key(stringValue: "nextPage"))
        }
    }
}

/// One section's rows, of whatever type its kind syncs.
package struct ErasedSection: Encodable, Sendable {
    var created: [any Encodable & Sendable] = []
    var updated: [any Encodable & Sendable] = []
    var deleted: [UUID] = []

    mutating func merge(_ other: ErasedSection) {
        created += other.created
        updated += other.updated
        deleted += other.deleted
    }

    enum CodingKeys: String, CodingKey { case created, updated, deleted }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var createdRows = container.nestedUnkeyedContainer(forKey: .created)
        for row in created { try createdRows.encode(row) }
        var updatedRows = container.nestedUnkeyedContainer(forKey: .updated)
        for row in updated { try updatedRows.encode(row) }
        try container.encode(deleted, forKey: .deleted)
    }
}
