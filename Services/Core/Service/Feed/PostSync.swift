import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Posts as sync sends them: as the feed shows them to the syncing member (counts, their own
/// reaction and votes). Deleted posts are in `deleted`. A comment added or removed logs its
/// post as changed, so the post's comment count travels with sync; reactions do not (one
/// change-log row per reaction would flood it): a post's reaction counts are as of the last
/// time the post, or a comment on it, changed, and fresh in every feed and post read.
enum PostSync {
    static func kind() -> SyncKind {
        SyncKind(
            kind: "post", section: "posts", as: Post.self,
            byId: { community, ids, connection, logger in
                try await posts(
                    """
                    SELECT \(unescaped: PostRows.columns) FROM posts p \(unescaped: PostRows.joins)
                    WHERE p.community_id = \(community) AND p.deleted_at IS NULL AND p.id = ANY(\(ids))
                    ORDER BY p.id
                    """, on: connection, logger: logger)
            },
            page: { community, after, limit, connection, logger in
                try await posts(
                    """
                    SELECT \(unescaped: PostRows.columns) FROM posts p \(unescaped: PostRows.joins)
                    WHERE p.community_id = \(community) AND p.deleted_at IS NULL
                      AND (\(after == nil) OR p.id > \(after ?? .random()))
                    ORDER BY p.id
                    LIMIT \(limit)
                    """, on: connection, logger: logger)
            })
    }

    private static func posts(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(UUID, Post)] {
        var posts: [(UUID, Post)] = []
        let now = Date()
        for try await row in try await connection.query(query, logger: logger) {
            let post = try PostRows.read(row, now: now)
            posts.append((post.id, post))
        }
        return posts
    }
}
