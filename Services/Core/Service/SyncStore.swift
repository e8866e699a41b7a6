import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// `GET /communities/{id}/sync?since=TOKEN`.
///
/// A sync token is the reader's MVCC snapshot (`pg_current_snapshot()`), not a time. Every
/// change to a synced row leaves a `change_log` row stamped with its transaction id; the next
/// sync returns the entities whose changes that snapshot could not see. A transaction still
/// running when the token was made is invisible to it, so its changes come with a later sync
/// however old its timestamps are: nothing committed concurrently is ever missed. The whole
/// read runs in one REPEATABLE READ snapshot, which becomes the next token. Its cost follows
/// the number of changes: the log is read by `(community_id, txid)` from the token's xmin.
package struct SyncStore: Sendable {
    let database: Database
    let logger: Logger

    /// `v1.<snapshot>.<issued at, µs>`, base64url: opaque to clients.
    package struct Token: Equatable {
        static let version = "v1"
        package var snapshot: String
        package var issuedAt: Date

        init(snapshot: String, issuedAt: Date) {
            self.snapshot = snapshot
            self.issuedAt = issuedAt
        }

        package init(text: String) throws {
            let invalid = APIError.validation(["since": "is not a sync token this API issued"])
            guard let data = Data(base64URLEncoded: text), let decoded = String(data: data, encoding: .utf8) else {
                throw invalid
            }
            let parts = decoded.split(separator: "|", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] == Self.version, let micros = Int64(parts[2]),
                Self.isSnapshot(parts[1])
            else { throw invalid }
            self.snapshot = String(parts[1])
            self.issuedAt = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        }

        /// `xmin:xmax:xip,...` as PostgreSQL writes a snapshot, with xmin ≤ xip < xmax (what
        /// PostgreSQL would refuse must be the client's error, not ours).
        static func isSnapshot(_ text: Substring) -> Bool {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, let xmin = UInt64(fields[0]), let xmax = UInt64(fields[1]), xmin <= xmax
            else { return false }
            let running = fields[2].split(separator: ",", omittingEmptySubsequences: true)
            return running.allSatisfy { UInt64($0).map { xmin <= $0 && $0 < xmax } ?? false }
        }

        var text: String {
            let micros = Int64((issuedAt.timeIntervalSince1970 * 1_000_000).rounded())
            return Data("\(Self.version)|\(snapshot)|\(micros)".utf8).base64URLEncodedString()
        }
    }

    /// Older tokens than this start over with a full sync: the change log keeps 90 days.
    static let tokenLifetime: TimeInterval = 80 * 24 * 3600

    func sync(_ communityId: UUID, for userId: UUID, since token: Token?) async throws -> CommunitySync {
        try await database.transaction(scope: .user(userId), isolation: .repeatableRead) { connection in
            var snapshot = ""
            var now = Date()
            for try await (text, time) in try await connection.query(
                "SELECT pg_current_snapshot()::text, NOW()", logger: logger
            ).decode((String, Date).self) {
                (snapshot, now) = (text, time)
            }
            guard let record = try await CommunityStore.record(communityId, on: connection, logger: logger),
                record.deletedAt == nil
            else { throw CommunityAccess.notFound }
            let role = try await Self.role(of: userId, in: communityId, on: connection, logger: logger)
            let next = Token(snapshot: snapshot, issuedAt: now).text

            guard let token, now.timeIntervalSince(token.issuedAt) < Self.tokenLifetime else {
                let members = try await members(of: communityId, userIds: nil, on: connection)
                return CommunitySync(
                    community: record.community(role: role), members: SyncSection(created: members),
                    syncToken: next, full: true)
            }

            var changedMembers: [UUID: Bool] = [:]
            var communityChanged = false
            for try await (kind, entityId, inserted) in try await connection.query(
                Self.changes(in: communityId, since: token.snapshot), logger: logger
            ).decode((String, UUID, Bool).self) {
                switch kind {
                case "member": changedMembers[entityId] = inserted
                case "community": communityChanged = true
                default: break  // Events, posts and transactions join here when they land.
                }
            }
            var section = SyncSection<CommunityMember>()
            if !changedMembers.isEmpty {
                let current = try await members(of: communityId, userIds: Array(changedMembers.keys), on: connection)
                let present = Set(current.map(\.userId))
                for member in current {
                    if changedMembers[member.userId] == true {
                        section.created.append(member)
                    } else {
                        section.updated.append(member)
                    }
                }
                section.deleted = changedMembers.keys.filter { !present.contains($0) }.sorted {
                    $0.uuidString < $1.uuidString
                }
            }
            return CommunitySync(
                community: communityChanged ? record.community(role: role) : nil, members: section,
                syncToken: next, full: false)
        }
    }

    /// The entities of `communityId` changed by transactions `snapshot` did not see, each once,
    /// with whether one of those changes created it.
    package static func changes(in communityId: UUID, since snapshot: String) -> PostgresQuery {
        """
        SELECT entity_kind, entity_id, bool_or(operation = 'insert')
        FROM change_log
        WHERE community_id = \(communityId)
          AND txid >= pg_snapshot_xmin(\(snapshot)::pg_snapshot)
          AND NOT pg_visible_in_snapshot(txid, \(snapshot)::pg_snapshot)
        GROUP BY entity_kind, entity_id
        """
    }

    /// Current members, all or those among `userIds`.
    private func members(
        of communityId: UUID, userIds: [UUID]?, on connection: PostgresConnection
    ) async throws
        -> [CommunityMember]
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: MemberStore.columns) \(unescaped: MemberStore.tables)
            WHERE m.community_id = \(communityId) AND m.left_at IS NULL
              AND (\(userIds == nil) OR m.user_id = ANY(\(userIds ?? [])))
            ORDER BY m.joined_at, m.id
            """, logger: logger)
        var members: [CommunityMember] = []
        for try await row in rows.decode(MemberStore.Row.self) { members.append(MemberStore.decode(row).0) }
        return members
    }

    private static func role(
        of userId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    )
        async throws -> MemberRole
    {
        let rows = try await connection.query(
            """
            SELECT role::text FROM members
            WHERE community_id = \(communityId) AND user_id = \(userId) AND left_at IS NULL
            """, logger: logger)
        for try await role in rows.decode(String.self) { return MemberRole(rawValue: role) ?? .member }
        throw CommunityAccess.notFound
    }
}

struct SyncRoutes {
    let store: SyncStore
    let access: CommunityAccess

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/communities/:communityId/sync") { request, context in
            let userId = try context.requireUser()
            let granted = try await access.require(.viewContent, in: context.communityId(), by: userId)
            let token = try request.uri.queryParameters["since"].map { try SyncStore.Token(text: String($0)) }
            let sync = try await store.sync(granted.record.id, for: userId, since: token)
            return try Response.data(sync, requestId: context.requestId)
        }
    }
}
