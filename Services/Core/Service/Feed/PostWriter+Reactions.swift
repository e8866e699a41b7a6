import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Reactions and poll votes: one per person per post (an upsert), and a poll's choices.
extension PostWriter {
    /// The caller's reaction, set or changed (an upsert: one per person per post).
    func react(
        _ type: ReactionType?, to postId: UUID, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> ReactionSummary {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let found: Int
            if let type {
                found = try await connection.query(
                    """
                    WITH post AS (
                        SELECT id FROM posts WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                    ), upserted AS (
                        INSERT INTO reactions AS r (post_id, user_id, type)
                        SELECT id, \(granted.userId), \(type.rawValue)::reaction_type FROM post
                        ON CONFLICT (post_id, user_id) DO UPDATE SET type = excluded.type
                        WHERE r.type IS DISTINCT FROM excluded.type
                        RETURNING 1
                    )
                    SELECT 1 FROM post
                    """, logger: logger
                ).collect().count
            } else {
                found = try await connection.query(
                    """
                    WITH post AS (
                        SELECT id FROM posts WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                    ), removed AS (
                        DELETE FROM reactions WHERE post_id IN (SELECT id FROM post) AND user_id = \(granted.userId)
                        RETURNING 1
                    )
                    SELECT 1 FROM post
                    """, logger: logger
                ).collect().count
            }
            guard found == 1 else { throw FeedErrors.postNotFound }
            change.touched(1)
            return try await Self.reactions(of: postId, on: connection, logger: logger)
        }
    }

    /// The caller's choices in a poll, replacing any before: one option, or several when the
    /// poll allows it, until it closes.
    func vote(
        _ options: [Int]?, in postId: UUID, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> Post {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let key = "vote:\(postId.lowercasedString):\(granted.userId.lowercasedString)"
            try await connection.run("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
            let rows = try await connection.query(
                """
                SELECT type::text AS type, poll_data::text AS poll_data FROM posts
                WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                """, logger: logger)
            var found: (type: String, poll: String?)?
            for try await row in rows {
                var cells = RowReader(row)
                found = (try cells.next("type"), try cells.next("poll_data"))
            }
            guard let (type, pollText) = found else { throw FeedErrors.postNotFound }
            guard type == PostType.poll.rawValue, let pollText else { throw FeedErrors.notAPoll }
            let poll = try JSONCoding.decoder.decode(PostRows.PollData.self, from: Data(pollText.utf8))
            guard !poll.isClosed(at: Date()) else { throw FeedErrors.pollClosed }
            let chosen = options ?? []
            if let options {
                if let missing = options.first(where: { !poll.options.indices.contains($0) }) {
                    throw APIError.validation(["optionIndexes": "option \(missing) does not exist in this poll"])
                }
                if !poll.allowMultiple, options.count != 1 {
                    throw APIError.validation(["optionIndexes": "this poll takes exactly one choice"])
                }
            }
            let removed = try await connection.changedRows(
                """
                DELETE FROM poll_votes WHERE post_id = \(postId) AND user_id = \(granted.userId)
                  AND NOT (option_index = ANY(\(chosen)))
                RETURNING 1
                """, logger: logger)
            let added = try await connection.changedRows(
                """
                INSERT INTO poll_votes (post_id, user_id, option_index)
                SELECT \(postId), \(granted.userId), o FROM unnest(\(chosen)::int[]) AS o
                ON CONFLICT (post_id, user_id, option_index) DO NOTHING
                RETURNING 1
                """, logger: logger)
            change.touched(max(1, removed + added))
            return try await answer(postId, in: community.id, on: connection)
        }
    }

    static func reactions(
        of postId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> ReactionSummary {
        let rows = try await connection.query(
            """
            SELECT coalesce(sum(c.likes), 0)::int8 AS likes, coalesce(sum(c.loves), 0)::int8 AS loves,
                   coalesce(sum(c.laughs), 0)::int8 AS laughs, coalesce(sum(c.celebrates), 0)::int8 AS celebrates,
                   (SELECT r.type::text FROM reactions r WHERE r.post_id = \(postId) AND r.user_id = app_current_user_id())
                       AS my_reaction
            FROM post_counts c WHERE c.post_id = \(postId)
            """, logger: logger)
        for try await row in rows {
            var cells = RowReader(row)
            let counts = ReactionCounts(
                like: try cells.next("likes"), love: try cells.next("loves"), laugh: try cells.next("laughs"),
                celebrate: try cells.next("celebrates"))
            let mine = (try cells.next("my_reaction") as String?).flatMap(ReactionType.init(rawValue:))
            return ReactionSummary(postId: postId, reactionCounts: counts, myReaction: mine)
        }
        return ReactionSummary(postId: postId, reactionCounts: ReactionCounts(), myReaction: nil)
    }
}
