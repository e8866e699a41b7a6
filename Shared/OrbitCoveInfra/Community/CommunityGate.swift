import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// The one gate every community route passes, in every service: who the caller is in the
/// community, and whether the permission matrix lets them do what they ask. A non-member (or
/// anyone, for a deleted community) gets `404 COMMUNITY_NOT_FOUND`, never a hint that it
/// exists; a member without the permission gets `403 FORBIDDEN`; a caller with no account, or
/// a deleted one, read from PostgreSQL, `401 ACCOUNT_DELETED` (SQLSTATE `OCA01`, migration
/// 0081). Memberships come from the Redis cache (``CommunityCache``) or PostgreSQL, under the
/// caller's row-level security.
package struct CommunityGate: Sendable {
    package let database: Database
    package let cache: CommunityCache
    let logger: Logger

    package init(database: Database, cache: CommunityCache, logger: Logger) {
        self.database = database
        self.cache = cache
        self.logger = logger
    }

    /// The caller's standing in one community, resolved once per request.
    package struct Granted: Sendable {
        package var userId: UUID
        package var record: CommunityRecord
        package var membership: Membership
        /// The cache generation the caller's view was read under, for storing what it loads.
        package var generation: String?
        /// The first members page, when asked for and cached.
        package var cachedMembers: EncodedPage?
        package var community: Community { record.community(role: membership.role) }
        package var communityId: UUID { record.id }

        /// Whether the matrix lets this member do `action` (a `403 FORBIDDEN` if not).
        package func require(_ action: CommunityAction) throws(APIError) {
            guard record.deletedAt == nil || action == .restoreCommunity else { throw CommunityGate.notFound }
            guard CommunityPermissions.allows(action, for: membership, settings: record.settings) else {
                // A deleted community is hidden from everyone who cannot bring it back.
                throw record.deletedAt == nil ? APIError.forbidden : CommunityGate.notFound
            }
        }

        /// Whether this member may do `action` to a thing someone created (an event, a post):
        /// the matrix's row-level rules (own things, the 24-hour window on posts, admins any).
        package func require(_ action: ContentAction, on thing: OwnedContent, now: Date = Date()) throws(APIError) {
            guard record.deletedAt == nil else { throw CommunityGate.notFound }
            guard CommunityPermissions.allows(action, on: thing, by: userId, as: membership, now: now) else {
                throw APIError.forbidden
            }
        }
    }

    package static let notFound = APIError.notFound("COMMUNITY_NOT_FOUND", "No such community")

    /// The caller's standing in `communityId`, if `action` is allowed. With
    /// `membersPageLimit`, also the cached first page of members of that size, if any.
    package func require(
        _ action: CommunityAction, in communityId: UUID, by userId: UUID, membersPageLimit: Int? = nil
    ) async throws -> Granted {
        let granted = try await resolve(communityId, by: userId, membersPageLimit: membersPageLimit)
        try granted.require(action)
        return granted
    }

    /// The caller's membership of `communityId`, whatever they are about to do: `404` for a
    /// non-member, and for a deleted community unless they may restore it.
    package func resolve(_ communityId: UUID, by userId: UUID, membersPageLimit: Int? = nil) async throws -> Granted {
        var snapshot = await cache.lookup(communityId, userId, membersPageLimit: membersPageLimit)
        if snapshot.membership?.role == nil, snapshot.membership != nil { throw Self.notFound }
        if snapshot.record == nil || snapshot.membership == nil {
            guard let loaded = try await fetch(communityId, userId) else {
                // Nothing visible: not a member (row-level security hides the row) or no such id.
                await cache.store(.init(role: nil), communityId, userId, generation: snapshot.generation)
                throw Self.notFound
            }
            await cache.store(loaded.record, generation: snapshot.generation)
            await cache.store(.init(role: loaded.role), communityId, userId, generation: snapshot.generation)
            (snapshot.record, snapshot.membership) = (loaded.record, .init(role: loaded.role))
        }
        guard let record = snapshot.record, let role = snapshot.membership?.role else { throw Self.notFound }
        let membership = record.membership(of: userId, role: role)
        if record.deletedAt != nil,
            !CommunityPermissions.allows(.restoreCommunity, for: membership, settings: record.settings)
        {
            throw Self.notFound
        }
        return Granted(
            userId: userId, record: record, membership: membership, generation: snapshot.generation,
            cachedMembers: snapshot.membersPage)
    }

    /// What to answer for a write `error` refused by the wall (`42501`) in `communityId`: most
    /// often the caller was removed, or the community deleted, after this gate let the write
    /// in. The cache is emptied and the caller hears what the gate says now; if it still lets
    /// them in, the refusal is the error it is. Rethrows anything else as it is.
    package func rethrow(_ error: any Error, ofAWriteIn communityId: UUID, by userId: UUID) async throws -> Never {
        guard let refused = error as? PSQLError, refused.serverInfo?[.sqlState] == "42501" else { throw error }
        await cache.invalidate(communityId)
        do {
            _ = try await resolve(communityId, by: userId)
        } catch let refusal as APIError {
            logger.notice(
                "the wall refused a write whose author the gate no longer lets in",
                metadata: ["community": "\(communityId)", "error": .string(logDescription(of: refused))])
            throw refusal
        }
        throw error
    }

    private struct Loaded {
        var record: CommunityRecord
        var role: MemberRole?
    }

    /// One statement, outside a transaction: `app_community_standing` (migration 0028) applies
    /// `communities_read`'s rule to this one pair, so a transaction entered as the user (four
    /// round trips) is not needed to read it. It refuses with `OCA01` a caller it finds in no
    /// community who has no account or a deleted one (0081), as the entry would.
    private func fetch(_ communityId: UUID, _ userId: UUID) async throws -> Loaded? {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                CommunityStanding(communityId: communityId, userId: userId), logger: logger)
            for try await row in rows {
                var cells = RowReader(row)
                let record = try CommunityRecord.read(&cells, settingsTexts: cache.settingsTexts)
                let role: String? = try cells.next("role")
                return Loaded(record: record, role: role.flatMap(MemberRole.init(rawValue:)))
            }
            return nil
        }
    }
}

/// The community and the caller's role in it, when the caller is a member: what the gate
/// reads on a cache miss, on most requests of a community not read for a while (prepared once
/// per connection). Its columns are ``CommunityRecord/columns``, then `role`.
struct CommunityStanding: PreparedRows {
    static let sql = "SELECT * FROM app_community_standing($1, $2)"
    var communityId: UUID
    var userId: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(communityId)
        bindings.append(userId)
        return bindings
    }
}
