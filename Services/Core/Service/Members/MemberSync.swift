import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Members as sync sends them: keyed by user id (the `change_log` trigger names members so).
enum MemberSync {
    static func kind() -> SyncKind {
        SyncKind(
            kind: "member", section: "members", as: CommunityMember.self,
            byId: { community, userIds, connection, logger in
                try await members(
                    """
                    SELECT \(unescaped: MemberStore.columns) \(unescaped: MemberStore.tables)
                    WHERE m.community_id = \(community) AND m.left_at IS NULL AND m.user_id = ANY(\(userIds))
                    ORDER BY m.joined_at, m.id
                    """, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await members(
                    """
                    SELECT \(unescaped: MemberStore.columns) \(unescaped: MemberStore.tables)
                    WHERE m.community_id = \(community) AND m.left_at IS NULL
                      AND (\(after == nil) OR m.user_id > \(after ?? .random()))
                    ORDER BY m.user_id
                    LIMIT \(limit)
                    """, on: connection, logger: logger)
            })
    }

    private static func members(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, CommunityMember)] {
        var members: [(UUID, CommunityMember)] = []
        for try await row in try await connection.query(query, logger: logger) {
            let member = try MemberStore.read(row).0
            members.append((member.userId, member))
        }
        return members
    }
}
