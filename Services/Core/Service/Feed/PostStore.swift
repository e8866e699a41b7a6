import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The feed's reads, each one statement in a transaction entered as the reader.
struct PostStore: Sendable {
    let database: Database
    let logger: Logger

    /// Newest first by (created_at, id), soft-deleted posts gone.
    static let order = Keyset(.newestFirst, time: "p.created_at", id: "p.id")
    /// Comments oldest first: a conversation reads down.
    static let commentOrder = Keyset(.oldestFirst, time: "c.created_at", id: "c.id")

    /// The pinned condition, as the reads and the pin limit check it: pinned and not expired.
    static let activePin = "p.is_pinned AND (p.pinned_until IS NULL OR p.pinned_until > NOW())"

    /// A page of the feed. The first page (no cursor) is led by the pinned posts, newest pin
    /// first; the pages themselves hold the other posts, so a pinned post appears once.
    func feed(
        of communityId: UUID, viewer: UUID, page: PageRequest
    ) async throws -> (
        pinned: [Post], page: [(Post, PageCursor)]
    ) {
        try await database.transaction(userId: viewer) { connection in
            let now = Date()
            let rows = try await connection.query(
                """
                WITH chosen AS (
                    (SELECT p.id, TRUE AS lead, p.pinned_at AS at FROM posts p
                     WHERE p.community_id = \(communityId) AND p.deleted_at IS NULL AND \(unescaped: Self.activePin)
                       AND \(page.cursor == nil)
                     ORDER BY p.pinned_at DESC LIMIT \(FeedLimits.pins))
                    UNION ALL
                    (SELECT p.id, FALSE, p.created_at FROM posts p
                     WHERE p.community_id = \(communityId) AND p.deleted_at IS NULL AND NOT (\(unescaped: Self.activePin))
                     \(page: page, in: Self.order))
                )
                SELECT \(unescaped: PostRows.columns), chosen.lead AS lead
                FROM chosen JOIN posts p ON p.id = chosen.id
                \(unescaped: PostRows.joins)
                ORDER BY chosen.lead DESC, chosen.at DESC, p.id DESC
                """, logger: logger)
            var pinned: [Post] = []
            var posts: [(Post, PageCursor)] = []
            for try await row in rows {
                var cells = RowReader(row)
                let post = try PostRows.read(&cells, now: now)
                if try cells.next("lead") as Bool {
                    pinned.append(post)
                } else {
                    posts.append((post, PageCursor(createdAt: post.createdAt, id: post.id)))
                }
            }
            return (pinned, posts)
        }
    }

    /// One post, with the first page of its comments.
    func post(_ postId: UUID, in communityId: UUID, viewer: UUID, commentsLimit: Int) async throws -> PostDetail {
        try await database.transaction(userId: viewer) { connection in
            guard let post = try await Self.post(postId, in: communityId, on: connection, logger: logger) else {
                throw FeedErrors.postNotFound
            }
            let page = PageRequest(cursor: nil, limit: commentsLimit)
            let comments = try await Self.comments(of: postId, page: page, on: connection, logger: logger)
            let more = comments.count > page.limit
            return PostDetail(
                post: post, comments: comments.prefix(page.limit).map(\.0),
                commentsNextCursor: more ? comments[page.limit - 1].1.token : nil)
        }
    }

    /// A page of a post's comments and replies, oldest first (clients thread them by `parentId`).
    func comments(
        of postId: UUID, in communityId: UUID, viewer: UUID, page: PageRequest
    ) async throws -> [(
        Comment, PageCursor
    )] {
        try await database.transaction(userId: viewer) { connection in
            guard try await Self.postExists(postId, in: communityId, on: connection, logger: logger) else {
                throw FeedErrors.postNotFound
            }
            return try await Self.comments(of: postId, page: page, on: connection, logger: logger)
        }
    }

    /// The post as the transaction's reader sees it, if it is in `communityId` and not deleted.
    static func post(
        _ postId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> Post? {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: PostRows.columns) FROM posts p \(unescaped: PostRows.joins)
            WHERE p.id = \(postId) AND p.community_id = \(communityId) AND p.deleted_at IS NULL
            """, logger: logger)
        for try await row in rows { return try PostRows.read(row) }
        return nil
    }

    static func postExists(
        _ postId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        try await connection.query(
            """
            SELECT 1 FROM posts WHERE id = \(postId) AND community_id = \(communityId) AND deleted_at IS NULL
            """, logger: logger
        ).collect().count == 1
    }

    static func comments(
        of postId: UUID, page: PageRequest, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(Comment, PageCursor)] {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: PostRows.commentColumns) FROM comments c \(unescaped: PostRows.commentJoins)
            WHERE c.post_id = \(postId) AND c.deleted_at IS NULL
            \(page: page, in: Self.commentOrder)
            """, logger: logger)
        var comments: [(Comment, PageCursor)] = []
        for try await row in rows {
            let comment = try PostRows.readComment(row)
            comments.append((comment, PageCursor(createdAt: comment.createdAt, id: comment.id)))
        }
        return comments
    }
}

extension PostStore {
    /// Where a search's next page starts: its place in the ranked results, for this query only.
    struct SearchPage: Sendable {
        var offset = 0
        var limit: Int

        static let invalid = APIError.validation(["cursor": "is not a cursor of this search"])

        init(_ request: Request, text: String) throws {
            let query = request.uri.queryParameters
            limit = try PageCursor.limit(from: query.get("limit"))
            if let token = query.get("cursor") {
                let parts = try OpaqueToken.parts(of: token, maxLength: 400, orThrow: Self.invalid)
                guard parts.count == 3, parts[0] == "search", let offset = Int(parts[1]), (0...10_000).contains(offset),
                    parts[2] == Self.fingerprint(text)
                else { throw Self.invalid }
                self.offset = offset
            }
        }

        func next(after count: Int, text: String) -> String? {
            count > limit ? OpaqueToken.make(["search", String(offset + limit), Self.fingerprint(text)]) : nil
        }

        /// Ties a cursor to its query, so a cursor of one search cannot page another.
        static func fingerprint(_ text: String) -> String {
            String(text.unicodeScalars.reduce(UInt32(2_166_136_261)) { ($0 ^ $1.value) &* 16_777_619 }, radix: 36)
        }
    }

    /// Posts whose text, poll or comments match `text`, best first: PostgreSQL full text search
    /// in the community's language (`websearch_to_tsquery`: quotes, `or` and `-` as people type
    /// them, never a syntax error), accents folded, and Japanese, Chinese or Korean text found
    /// by its pairs of characters (migration 0029). A match in a comment counts half as much as
    /// one in the post.
    func search(
        _ text: String, in communityId: UUID, viewer: UUID, page: SearchPage
    ) async throws -> (posts: [Post], next: String?) {
        try await database.transaction(userId: viewer) { connection in
            // The matching is `feed_search_hits` (migration 0031): under the policies the match
            // could not use the search indexes.
            let rows = try await connection.query(
                """
                WITH ranked AS (
                    SELECT h.post_id AS id, max(h.rank) AS rank, max(h.created_at) AS created_at
                    FROM feed_search_hits(
                        \(communityId), feed_search_query(feed_search_config(\(communityId)), \(text))) AS h
                    GROUP BY h.post_id
                    ORDER BY max(h.rank) DESC, max(h.created_at) DESC, h.post_id DESC
                    LIMIT \(page.limit + 1) OFFSET \(page.offset)
                )
                SELECT \(unescaped: PostRows.columns)
                FROM ranked JOIN posts p ON p.id = ranked.id
                \(unescaped: PostRows.joins)
                ORDER BY ranked.rank DESC, ranked.created_at DESC, p.id DESC
                """, logger: logger)
            var posts: [Post] = []
            let now = Date()
            for try await row in rows { posts.append(try PostRows.read(row, now: now)) }
            return (Array(posts.prefix(page.limit)), page.next(after: posts.count, text: text))
        }
    }
}
