import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Row-level security holds on its own for the feed's tables: statements the application
/// never runs, run as the services' role in a member's transaction, are refused or touch
/// nothing.
@Suite struct FeedSecondWallTests {
    typealias Outcome = SecondWallTests.Outcome

    @Test func aMemberCannotTouchAnothersReactionVoteOrCommentNorCountsNorOtherCommunities() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben, eve) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                try await api.signIn("Eve")
            )
            let club = try await api.community(by: coach)
            let lions = try await api.community(by: eve)
            try await api.join(ada, club, invitedBy: coach)
            try await api.join(ben, club, invitedBy: coach)
            let poll = try await FeedTests.post(
                api, in: club, by: coach, #"{"type":"poll","pollData":{"question":"Q","options":["a","b"]}}"#)
            let path = "/api/v1/communities/\(club.id)/posts/\(poll.id)"
            _ = try await api.call(.post, "\(path)/reactions", as: ada, json: #"{"type":"love"}"#)
            _ = try await api.call(.post, "\(path)/votes", as: ada, json: #"{"optionIndexes":[0]}"#)
            _ = try await api.call(.post, "\(path)/comments", as: ada, json: #"{"content":"mine"}"#)
            try await withTestDatabase { db in
                func run(_ sql: PostgresQuery, as person: UUID) async -> Outcome {
                    await SecondWallTests.run(sql, as: person, in: db)
                }
                // Ben, a member, on Ada's rows.
                #expect(
                    await run("UPDATE reactions SET type = 'like' WHERE post_id = \(poll.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                #expect(
                    await run("DELETE FROM reactions WHERE post_id = \(poll.id) RETURNING 1", as: ben.id) == .rows(0))
                #expect(
                    await run(
                        "UPDATE poll_votes SET option_index = 1 WHERE post_id = \(poll.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                #expect(
                    await run("DELETE FROM poll_votes WHERE post_id = \(poll.id) RETURNING 1", as: ben.id) == .rows(0))
                #expect(
                    await run(
                        "INSERT INTO poll_votes (post_id, user_id, option_index) VALUES (\(poll.id), \(ada.id), 1) RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run(
                        "INSERT INTO reactions (post_id, user_id, type) VALUES (\(poll.id), \(ada.id), 'like') RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run("UPDATE comments SET content = 'x' WHERE post_id = \(poll.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                #expect(
                    await run(
                        "INSERT INTO comments (post_id, author_id, content) VALUES (\(poll.id), \(ada.id), 'x') RETURNING 1",
                        as: ben.id) == .refused)
                // Counts are the triggers' alone.
                #expect(await run("UPDATE post_counts SET loves = 100 RETURNING 1", as: ada.id) == .rows(0))
                #expect(
                    await run(
                        "INSERT INTO post_counts (post_id, slot, loves) VALUES (\(poll.id), 0, 9) RETURNING 1",
                        as: ada.id)
                        == .refused)
                #expect(
                    await run("SELECT post_count_add(\(poll.id), \(ben.id), 'love', 1000)", as: ben.id) == .refused)
                // Who was told of a mention is written with the post or comment, by its author.
                #expect(
                    await run(
                        """
                        INSERT INTO mentions (subject_id, user_id, community_id, post_id)
                        VALUES (\(poll.id), \(ada.id), \(club.id), \(poll.id)) RETURNING 1
                        """, as: ben.id) == .refused)
                // Someone else's community: nothing to see, nothing to write.
                for sql: PostgresQuery in [
                    "SELECT 1 FROM posts WHERE id = \(poll.id)", "SELECT 1 FROM reactions WHERE post_id = \(poll.id)",
                    "SELECT 1 FROM poll_votes WHERE post_id = \(poll.id)",
                    "SELECT 1 FROM comments WHERE post_id = \(poll.id)",
                    "SELECT 1 FROM post_counts WHERE post_id = \(poll.id)",
                    "SELECT 1 FROM mentions WHERE post_id = \(poll.id)",
                ] {
                    #expect(await run(sql, as: eve.id) == .rows(0), "\(sql.sql)")
                }
                #expect(
                    await run(
                        "INSERT INTO reactions (post_id, user_id, type) VALUES (\(poll.id), \(eve.id), 'like') RETURNING 1",
                        as: eve.id) == .refused)
                #expect(
                    await run(
                        "INSERT INTO posts (community_id, author_id, content) VALUES (\(club.id), \(eve.id), 'x') RETURNING 1",
                        as: eve.id) == .refused)
                // The search's matching runs past the policies (migration 0031), with their rule
                // inside: someone else's community has no hits for them.
                let hits: PostgresQuery = "SELECT * FROM feed_search_hits(\(club.id), 'mine'::tsquery)"
                #expect(await run(hits, as: ada.id) == .rows(1))
                #expect(await run(hits, as: eve.id) == .rows(0))
                // A comment is in its post's community whatever its writer says, and stays there.
                let placed = try await db.transaction(userId: ada.id) { connection in
                    try await connection.query(
                        """
                        INSERT INTO comments (post_id, author_id, content, community_id)
                        VALUES (\(poll.id), \(ada.id), 'elsewhere?', \(lions.id)) RETURNING community_id
                        """, logger: TestEnvironment.logger
                    ).collect().first?.decode(UUID.self)
                }
                #expect(placed == club.id)
                #expect(
                    await run(
                        "UPDATE comments SET community_id = \(lions.id) WHERE author_id = \(ada.id) RETURNING 1",
                        as: ada.id)
                        == .refused)
                // Ada's own rows are still hers to change.
                #expect(
                    await run("UPDATE reactions SET type = 'like' WHERE post_id = \(poll.id) RETURNING 1", as: ada.id)
                        == .rows(1))
            }
            let counts = try await api.call(.get, path, as: coach).data(PostDetail.self).post.reactionCounts
            #expect(counts == ReactionCounts(like: 1))
        }
    }

    /// The retention job purges posts deleted 30 days ago, with their comments, reactions,
    /// votes and counts, and comments deleted 30 days ago.
    @Test func deletedPostsAndCommentsArePurgedAfterThirtyDays() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let old = try await FeedTests.post(api, in: club, by: ada, #"{"content":"old"}"#)
            let kept = try await FeedTests.post(api, in: club, by: ada, #"{"content":"kept"}"#)
            let path = "/api/v1/communities/\(club.id)/posts"
            _ = try await api.call(.post, "\(path)/\(old.id)/reactions", as: coach, json: #"{"type":"like"}"#)
            _ = try await api.call(.post, "\(path)/\(old.id)/comments", as: coach, json: #"{"content":"c"}"#)
            let gone = try await api.call(.post, "\(path)/\(kept.id)/comments", as: coach, json: #"{"content":"gone"}"#)
                .data(OrbitCoveModels.Comment.self)
            #expect(try await api.call(.delete, "\(path)/\(old.id)", as: ada).status == .noContent)
            #expect(
                try await api.call(.delete, "\(path)/\(kept.id)/comments/\(gone.id)", as: coach).status == .noContent)
            try await withTestDatabase { db in
                @Sendable func count(_ sql: PostgresQuery) async throws -> Int {
                    try await db.transaction(scope: .system) { connection in
                        try await connection.query(sql, logger: TestEnvironment.logger).collect().count
                    }
                }
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        """
                        UPDATE posts SET deleted_at = NOW() - interval '31 days' WHERE id = \(old.id)
                        """, logger: TestEnvironment.logger)
                    try await connection.run(
                        "UPDATE comments SET deleted_at = NOW() - interval '31 days' WHERE id = \(gone.id)",
                        logger: TestEnvironment.logger)
                }
                #expect(try await eventually { try await count("SELECT 1 FROM posts WHERE id = \(old.id)") == 0 })
                #expect(try await eventually { try await count("SELECT 1 FROM comments WHERE id = \(gone.id)") == 0 })
                #expect(try await count("SELECT 1 FROM reactions WHERE post_id = \(old.id)") == 0)
                #expect(try await count("SELECT 1 FROM comments WHERE post_id = \(old.id)") == 0)
                #expect(try await count("SELECT 1 FROM post_counts WHERE post_id = \(old.id)") == 0)
                #expect(try await count("SELECT 1 FROM posts WHERE id = \(kept.id)") == 1)
            }
        }
    }
}
