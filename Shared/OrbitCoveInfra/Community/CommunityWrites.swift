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
        let (result, record) = try await database.transaction(scope: scope ?? .user(actor)) { connection in
            var record = ChangeRecord(community: communityId)
            let result = try await body(&record, connection)
            guard record.touchedRows > 0 else { return (result, record) }
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
            return (result, record)
        }
        // After the commit and before the response: nobody reads the old entries again.
        if record.touchedRows > 0, record.invalidates, let community = record.community {
            await cache.invalidate(community)
        }
        return result
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

    init(community: UUID?) { self.community = community }

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
}

extension PostgresConnection {
    /// Runs a write that ends in `RETURNING 1` and says how many rows it changed.
    package func changedRows(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await self.query(query, logger: logger).collect().count
    }
}
