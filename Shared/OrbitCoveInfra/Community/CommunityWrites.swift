import Foundation
import Logging
import OrbitCoveModels
import PostgresNIO

/// The one write path of a community's data. A change is its rows, its change-log entry (the
/// `change_log` triggers, for sync and realtime), its audit entry where the seed logs the
/// action, its outbox messages and, for changes to the community or its membership, the
/// cache invalidation: all in one transaction, from one call, and checked against the rows
/// the change touched, so a change that turned out to touch nothing (it lost a race with a
/// concurrent delete or demotion) records and sends nothing.
///
/// ```swift
/// try await writes.change(in: community, by: actor, request: facts) { change, connection in
///     change.touched(try await connection.changedRows("UPDATE ... RETURNING 1", logger: logger))
///     change.audit("member.role_changed", target: ("user", target))
///     change.announce(MemberRoleChanged(...))
///     change.invalidatesCache()
///     return member
/// }
/// ```
package struct CommunityWrites: Sendable {
    let database: Database
    let cache: CommunityCache
    let logger: Logger

    package init(database: Database, cache: CommunityCache, logger: Logger) {
        self.database = database
        self.cache = cache
        self.logger = logger
    }

    /// Runs `body` in a transaction as `actor` (or as the system, for work that crosses
    /// communities on purpose), then writes what it recorded if it touched any rows.
    ///
    /// `communityId` may be left out when only the body learns it (redeeming an invite code):
    /// it then sets ``ChangeRecord/community`` before it touches anything.
    package func change<Result: Sendable>(
        in communityId: UUID?, by actor: UUID, request: RequestFacts, scope: Database.AccessScope? = nil,
        _ body: (inout ChangeRecord, PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let (result, record): (Result, ChangeRecord)
        do {
            (result, record) = try await database.transaction(scope: scope ?? .user(actor)) { connection in
                var record = ChangeRecord(community: communityId)
                let result = try await body(&record, connection)
                try await write(record, by: actor, request: request, on: connection)
                return (result, record)
            }
        } catch {
            // The wall refused a row of a member removed meanwhile, say: what the gate says now.
            guard scope == nil, let communityId else { throw error }
            try await CommunityGate(database: database, cache: cache, logger: logger)
                .rethrow(error, ofAWriteIn: communityId, by: actor)
        }
        // After the commit and before the response: nobody reads the old entries again.
        for community in record.invalidatedCommunities { await cache.invalidate(community) }
        return result
    }

    /// A change to a user's own account, which belongs to no community: the profile, a deletion
    /// request, or the deletion itself, which ends the user's memberships (each one a
    /// ``ChangeRecord`` of its community, ``AccountChange/include(_:)``) in the same transaction.
    /// What a change to the profile makes stale is said here once: the cached member lists of
    /// every community the user is in (``AccountChange/showsInMemberLists()``).
    package func accountChange<Result: Sendable>(
        of userId: UUID, request: RequestFacts, scope: Database.AccessScope? = nil,
        _ body: (inout AccountChange, PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let (result, invalidated) = try await database.transaction(scope: scope ?? .user(userId)) { connection in
            var account = AccountChange()
            let result = try await body(&account, connection)
            for record in account.communityChanges {
                try await write(record, by: userId, request: request, on: connection)
            }
            var invalidated = account.communityChanges.flatMap(\.invalidatedCommunities)
            guard account.touchedRows > 0 else { return (result, invalidated) }
            for entry in account.audits {
                try await AuditLog.record(
                    entry.action, userId: userId, targetType: "user", targetId: userId, metadata: entry.metadata,
                    ipAddress: request.clientAddress, on: connection, logger: logger)
            }
            if account.invalidatesMemberLists {
                for try await community in try await connection.query(
                    "SELECT community_id FROM members WHERE user_id = \(userId) AND left_at IS NULL", logger: logger
                ).decode(UUID.self) {
                    invalidated.append(community)
                }
            }
            return (result, invalidated)
        }
        for community in Set(invalidated) { await cache.invalidate(community) }
        return result
    }

    /// The audit entries and outbox messages of a change that touched rows; nothing otherwise.
    private func write(
        _ record: ChangeRecord, by actor: UUID, request: RequestFacts, on connection: PostgresConnection
    ) async throws {
        guard record.touchedRows > 0 else { return }
        guard let communityId = record.community else { throw APIError.internalError }
        for entry in record.audits {
            try await AuditLog.record(
                entry.action, userId: actor, communityId: communityId, targetType: entry.target?.type,
                targetId: entry.target?.id, metadata: entry.metadata, ipAddress: request.clientAddress,
                on: connection, logger: logger)
        }
        for message in record.messages {
            try await message(communityId, actor, request.traceparent, connection, logger)
        }
    }
}

/// What one change recorded: how many rows it touched, and what to log and announce if any.
package struct ChangeRecord: Sendable {
    typealias PendingMessage =
        @Sendable (UUID, UUID, String?, PostgresConnection, Logger) async throws -> Void

    /// The community the change belongs to.
    package var community: UUID?
    package private(set) var touchedRows = 0
    private(set) var audits: [(action: String, target: (type: String, id: UUID)?, metadata: [String: JSONValue])] = []
    private(set) var messages: [PendingMessage] = []
    private(set) var invalidates = false

    /// A change to `community`; ``CommunityWrites/change(in:by:request:scope:_:)`` makes one
    /// for its body, and an account change makes one per community it touches.
    package init(community: UUID?) { self.community = community }

    /// Counts rows the change wrote (see ``PostgresConnection/changedRows(_:logger:)``).
    package mutating func touched(_ rows: Int) { touchedRows += rows }

    /// An audit-log entry for the action, written only if the change touched rows.
    package mutating func audit(
        _ action: String, target: (type: String, id: UUID)? = nil, metadata: [String: JSONValue] = [:]
    ) {
        audits.append((action, target, metadata))
    }

    /// A message to the queue through the outbox, sent only if the change touched rows.
    package mutating func announce<Payload: MessagePayload>(_ payload: Payload, to queue: QueueName = .notifications) {
        messages.append { community, actor, traceparent, connection, logger in
            try await Outbox.enqueue(
                MessageEnvelope(communityId: community, actorId: actor, data: payload), to: queue,
                traceparent: traceparent, on: connection, logger: logger)
        }
    }

    /// The change alters the community or its membership: its cached entries must go.
    package mutating func invalidatesCache() { invalidates = true }

    /// The community whose cache goes after the commit, if this change touched rows and asked.
    var invalidatedCommunities: [UUID] {
        guard touchedRows > 0, invalidates, let community else { return [] }
        return [community]
    }
}

/// What one change to a user's account recorded (see ``CommunityWrites/accountChange(of:request:scope:_:)``).
package struct AccountChange: Sendable {
    package private(set) var touchedRows = 0
    private(set) var audits: [(action: String, metadata: [String: JSONValue])] = []
    private(set) var communityChanges: [ChangeRecord] = []
    private(set) var invalidatesMemberLists = false

    /// Counts rows the change wrote.
    package mutating func touched(_ rows: Int) { touchedRows += rows }

    /// An audit-log entry about the account itself (no community), written only if rows changed.
    package mutating func audit(_ action: String, metadata: [String: JSONValue] = [:]) {
        audits.append((action, metadata))
    }

    /// The change alters what member lists show of the user (name, avatar): every community
    /// the user is in loses its cached entries after the commit.
    package mutating func showsInMemberLists() { invalidatesMemberLists = true }

    /// A change to one of the user's communities made in the same transaction, written (audit,
    /// messages, cache) exactly as ``CommunityWrites/change(in:by:request:scope:_:)`` writes one.
    package mutating func include(_ change: ChangeRecord) { communityChanges.append(change) }
}

extension PostgresConnection {
    /// Runs a write that ends in `RETURNING 1` and says how many rows it changed.
    package func changedRows(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await self.query(query, logger: logger).collect().count
    }
}
