import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Every change to the feed, each one `writes.change`: the rows, their change-log entries
/// (the triggers on `posts` and `comments`), the audit entry where the seed logs the action
/// (deletions by someone else, pins), and the messages (`post.created`, `comment.created`,
/// `post.mentioned`).
struct PostWriter: Sendable {
    let writes: CommunityWrites
    let logger: Logger

    // MARK: Posts

    func create(_ input: PostInput, in granted: CommunityGate.Granted, request: RequestFacts) async throws -> Post {
        let (community, author) = (granted.record, granted.userId)
        return try await writes.change(in: community.id, by: author, request: request) { change, connection in
            try await Self.checkEvent(input.linkedEventId.value, in: community.id, on: connection, logger: logger)
            let mentions = try await Self.checkMentions(
                input.mentions ?? [], in: community.id, on: connection, logger: logger)
            let poll = try input.poll.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
            let media = String(decoding: try JSONCoding.encoder.encode(input.mediaUrls ?? []), as: UTF8.self)
            let rows = try await connection.query(
                """
                INSERT INTO posts (community_id, author_id, type, content, media_urls, is_announcement, linked_event_id,
                                   poll_data, mentions)
                VALUES (\(community.id), \(author), \(input.type.rawValue)::post_type, \(input.content.value),
                        \(media)::jsonb, \(input.type == .announcement), \(input.linkedEventId.value),
                        \(poll)::jsonb, \(mentions))
                RETURNING id, (SELECT u.display_name::text FROM users u WHERE u.id = author_id) AS author_name
                """, logger: logger)
            var created: (UUID, String)?
            for try await row in rows {
                var cells = RowReader(row)
                created = (try cells.next("id"), try cells.next("author_name"))
            }
            guard let (postId, authorName) = created else { throw APIError.internalError }
            change.touched(1)
            let excerpt = (input.content.value ?? input.poll?.question ?? "").excerpt()
            let told = try await Self.recordMentions(
                mentions, in: postId, subject: postId, community: community.id, author: author, on: connection,
                logger: logger)
            change.announce(
                PostCreated(
                    communityId: community.id, communityName: community.name, postId: postId, authorId: author,
                    authorName: authorName, type: input.type, excerpt: excerpt, mentioned: told))
            if !told.isEmpty {
                change.announce(
                    MembersMentioned(
                        communityId: community.id, communityName: community.name, postId: postId, commentId: nil,
                        authorId: author, authorName: authorName, excerpt: excerpt, userIds: told))
            }
            guard let post = try await PostStore.post(postId, in: community.id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return post
        }
    }

    func edit(
        _ postId: UUID, _ input: PostInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> Post {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let current = try await Self.owned(postId, in: community.id, on: connection, logger: logger)
            try granted.require(.editPost, on: current.owned)
            var check = input
            check.type = current.type
            var problems: [String: String] = [:]
            let content: String? =
                switch input.content {
                case .keep: current.content
                case .clear: nil
                case .set(let text): text
                }
            check.linkedEventId =
                switch input.linkedEventId {
                case .keep: current.linkedEventId.map { .set($0) } ?? .clear
                case let other: other
                }
            check.poll = nil
            check.checkShape(&problems, content: content, media: input.mediaUrls ?? current.mediaUrls)
            if current.type == .poll { problems["pollData"] = nil }
            if !problems.isEmpty { throw APIError.validation(problems) }
            try await Self.checkEvent(input.linkedEventId.value, in: community.id, on: connection, logger: logger)
            var mentions: [UUID]?
            if let wanted = input.mentions {
                mentions = try await Self.checkMentions(wanted, in: community.id, on: connection, logger: logger)
            }
            let media = try input.mediaUrls.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
            let rows = try await connection.query(
                """
                UPDATE posts SET
                    content = CASE WHEN \(input.content.tag) = 'keep' THEN content ELSE \(input.content.value) END,
                    media_urls = coalesce(\(media)::jsonb, media_urls),
                    mentions = coalesce(\(mentions), mentions),
                    linked_event_id = CASE WHEN \(input.linkedEventId.tag) = 'keep' THEN linked_event_id
                                           ELSE \(input.linkedEventId.value) END,
                    updated_at = NOW()
                WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                RETURNING (SELECT u.display_name::text FROM users u WHERE u.id = \(granted.userId)) AS editor_name
                """, logger: logger)
            var editorName: String?
            for try await row in rows {
                var cells = RowReader(row)
                editorName = try cells.next("editor_name")
            }
            guard let editorName else { throw APIError.forbidden }
            change.touched(1)
            if granted.userId != current.owned.createdBy {
                change.audit("post.edited", target: ("post", postId))
            }
            if let mentions {
                // Only those never told about this post before hear of it now.
                let told = try await Self.recordMentions(
                    mentions, in: postId, subject: postId, community: community.id, author: current.owned.createdBy,
                    on: connection, logger: logger)
                if !told.isEmpty {
                    change.announce(
                        MembersMentioned(
                            communityId: community.id, communityName: community.name, postId: postId, commentId: nil,
                            authorId: granted.userId, authorName: editorName, excerpt: (content ?? "").excerpt(),
                            userIds: told))
                }
            }
            guard let post = try await PostStore.post(postId, in: community.id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return post
        }
    }

    /// A soft delete: the post leaves every read at once, and with it its comments, reactions
    /// and votes (no read reaches them past a deleted post); the retention job removes them all
    /// with the post after 30 days.
    func delete(_ postId: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let community = granted.record
        try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let current = try await Self.owned(postId, in: community.id, on: connection, logger: logger)
            try granted.require(.deletePost, on: current.owned)
            let removed = try await connection.changedRows(
                """
                UPDATE posts SET deleted_at = NOW(), is_pinned = FALSE, pinned_at = NULL, pinned_until = NULL
                WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard removed == 1 else { throw APIError.forbidden }
            change.touched(removed)
            if granted.userId != current.owned.createdBy {
                change.audit(
                    "post.deleted", target: ("post", postId),
                    metadata: ["author": .string(current.owned.createdBy.lowercasedString)])
            }
        }
    }

    /// Pins a post (admins), until `until` if given. At most ``FeedLimits/pins`` at once in a
    /// community, checked under a lock on the community's pins so two admins cannot both pin
    /// the fifth.
    func pin(
        _ postId: UUID, until: Date?, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> Post
    {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let key = "pins:\(community.id.lowercasedString)"
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
            guard try await PostStore.postExists(postId, in: community.id, on: connection, logger: logger) else {
                throw FeedErrors.postNotFound
            }
            let others = try await connection.query(
                """
                SELECT 1 FROM posts p
                WHERE p.community_id = \(community.id) AND p.deleted_at IS NULL AND p.id <> \(postId)
                  AND \(unescaped: PostStore.activePin)
                """, logger: logger
            ).collect().count
            guard others < FeedLimits.pins else { throw FeedErrors.pinLimit }
            let pinned = try await connection.changedRows(
                """
                UPDATE posts AS p SET is_pinned = TRUE,
                    pinned_at = CASE WHEN \(unescaped: PostStore.activePin) THEN p.pinned_at ELSE NOW() END,
                    pinned_until = \(until)
                WHERE p.id = \(postId) AND p.community_id = \(community.id) AND p.deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard pinned == 1 else { throw APIError.forbidden }
            change.touched(pinned)
            change.audit(
                "post.pinned", target: ("post", postId),
                metadata: until.map { ["until": .string(JSONCoding.formatTimestamp($0))] } ?? [:])
            guard let post = try await PostStore.post(postId, in: community.id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return post
        }
    }

    func unpin(_ postId: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws -> Post {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            guard try await PostStore.postExists(postId, in: community.id, on: connection, logger: logger) else {
                throw FeedErrors.postNotFound
            }
            let unpinned = try await connection.changedRows(
                """
                UPDATE posts SET is_pinned = FALSE, pinned_at = NULL, pinned_until = NULL
                WHERE id = \(postId) AND community_id = \(community.id) AND is_pinned
                RETURNING 1
                """, logger: logger)
            change.touched(unpinned)
            change.audit("post.unpinned", target: ("post", postId))
            guard let post = try await PostStore.post(postId, in: community.id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return post
        }
    }

    // MARK: Reactions and votes

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
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
            let rows = try await connection.query(
                """
                SELECT type::text AS type, poll_data::text AS poll_data FROM posts
                WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                """, logger: logger)
            var found: (String, String?)?
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
            guard let post = try await PostStore.post(postId, in: community.id, on: connection, logger: logger) else {
                throw APIError.internalError
            }
            return post
        }
    }

    // MARK: Comments

    func comment(
        on postId: UUID, content: String, parentId: UUID?, mentions: [UUID], granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> Comment {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let postRows = try await connection.query(
                """
                SELECT author_id FROM posts WHERE id = \(postId) AND community_id = \(community.id) AND deleted_at IS NULL
                """, logger: logger)
            var postAuthor: UUID?
            for try await row in postRows {
                var cells = RowReader(row)
                postAuthor = try cells.next("author_id")
            }
            guard let postAuthor else { throw FeedErrors.postNotFound }
            var parentAuthor: UUID?
            if let parentId {
                let parents = try await connection.query(
                    """
                    SELECT author_id, parent_id FROM comments
                    WHERE id = \(parentId) AND post_id = \(postId) AND deleted_at IS NULL
                    """, logger: logger)
                var parent: (UUID, UUID?)?
                for try await row in parents {
                    var cells = RowReader(row)
                    parent = (try cells.next("author_id"), try cells.next("parent_id"))
                }
                guard let parent else {
                    throw APIError.validation(["parentId": "is not a comment on this post"])
                }
                guard parent.1 == nil else { throw FeedErrors.replyToReply }
                parentAuthor = parent.0
            }
            let mentions = try await Self.checkMentions(mentions, in: community.id, on: connection, logger: logger)
            let rows = try await connection.query(
                """
                WITH added AS (
                    INSERT INTO comments (post_id, author_id, parent_id, content, mentions)
                    VALUES (\(postId), \(granted.userId), \(parentId), \(content), \(mentions))
                    RETURNING *
                )
                SELECT \(unescaped: PostRows.commentColumns) FROM added c \(unescaped: PostRows.commentJoins)
                """, logger: logger)
            var added: Comment?
            for try await row in rows { added = try PostRows.readComment(row) }
            guard let added else { throw APIError.internalError }
            change.touched(1)
            let told = try await Self.recordMentions(
                mentions, in: postId, subject: added.id, community: community.id, author: granted.userId,
                on: connection, logger: logger)
            change.announce(
                CommentCreated(
                    communityId: community.id, communityName: community.name, postId: postId, commentId: added.id,
                    postAuthorId: postAuthor, parentAuthorId: parentAuthor, authorId: granted.userId,
                    authorName: added.author.displayName, excerpt: content.excerpt(), mentioned: told))
            if !told.isEmpty {
                change.announce(
                    MembersMentioned(
                        communityId: community.id, communityName: community.name, postId: postId, commentId: added.id,
                        authorId: granted.userId, authorName: added.author.displayName, excerpt: content.excerpt(),
                        userIds: told))
            }
            return added
        }
    }

    func editComment(
        _ commentId: UUID, on postId: UUID, content: String?, mentions: [UUID]?, granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> Comment {
        let community = granted.record
        return try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let owned = try await Self.ownedComment(
                commentId, on: postId, in: community.id, on: connection, logger: logger)
            try granted.require(.editComment, on: owned)
            var checked: [UUID]?
            if let mentions {
                checked = try await Self.checkMentions(mentions, in: community.id, on: connection, logger: logger)
            }
            let mentions = checked
            let rows = try await connection.query(
                """
                WITH changed AS (
                    UPDATE comments SET content = coalesce(\(content), content), mentions = coalesce(\(mentions), mentions),
                        updated_at = NOW()
                    WHERE id = \(commentId) AND post_id = \(postId) AND deleted_at IS NULL
                    RETURNING *
                )
                SELECT \(unescaped: PostRows.commentColumns) FROM changed c \(unescaped: PostRows.commentJoins)
                """, logger: logger)
            var changed: Comment?
            for try await row in rows { changed = try PostRows.readComment(row) }
            guard let changed else { throw APIError.forbidden }
            change.touched(1)
            if granted.userId != owned.createdBy { change.audit("comment.edited", target: ("comment", commentId)) }
            if let mentions {
                let told = try await Self.recordMentions(
                    mentions, in: postId, subject: commentId, community: community.id, author: owned.createdBy,
                    on: connection, logger: logger)
                if !told.isEmpty {
                    change.announce(
                        MembersMentioned(
                            communityId: community.id, communityName: community.name, postId: postId,
                            commentId: commentId, authorId: granted.userId, authorName: changed.author.displayName,
                            excerpt: changed.content.excerpt(), userIds: told))
                }
            }
            return changed
        }
    }

    func deleteComment(
        _ commentId: UUID, on postId: UUID, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws {
        let community = granted.record
        try await writes.change(in: community.id, by: granted.userId, request: request) { change, connection in
            let owned = try await Self.ownedComment(
                commentId, on: postId, in: community.id, on: connection, logger: logger)
            try granted.require(.deleteComment, on: owned)
            let removed = try await connection.changedRows(
                """
                UPDATE comments SET deleted_at = NOW()
                WHERE id = \(commentId) AND post_id = \(postId) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard removed == 1 else { throw APIError.forbidden }
            change.touched(removed)
            if granted.userId != owned.createdBy {
                change.audit(
                    "comment.deleted", target: ("comment", commentId),
                    metadata: ["postId": .string(postId.lowercasedString)])
            }
        }
    }

    // MARK: Shared steps

    struct OwnedPost {
        var owned: OwnedContent
        var type: PostType
        var content: String?
        var mediaUrls: [String]
        var linkedEventId: UUID?
    }

    static func owned(
        _ postId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> OwnedPost {
        let rows = try await connection.query(
            """
            SELECT author_id, created_at, type::text AS type, content, media_urls::text AS media_urls, linked_event_id
            FROM posts WHERE id = \(postId) AND community_id = \(communityId) AND deleted_at IS NULL
            """, logger: logger)
        for try await row in rows {
            var cells = RowReader(row)
            let owned = OwnedContent(createdBy: try cells.next("author_id"), createdAt: try cells.next("created_at"))
            let type = PostType(rawValue: try cells.next("type")) ?? .text
            let content: String? = try cells.next("content")
            let media = try JSONCoding.decoder.decode(
                [String].self, from: Data((try cells.next("media_urls") as String).utf8))
            return OwnedPost(
                owned: owned, type: type, content: content, mediaUrls: media,
                linkedEventId: try cells.next("linked_event_id"))
        }
        throw FeedErrors.postNotFound
    }

    static func ownedComment(
        _ commentId: UUID, on postId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> OwnedContent {
        let rows = try await connection.query(
            """
            SELECT c.author_id, c.created_at FROM comments c JOIN posts p ON p.id = c.post_id
            WHERE c.id = \(commentId) AND c.post_id = \(postId) AND c.deleted_at IS NULL
              AND p.community_id = \(communityId) AND p.deleted_at IS NULL
            """, logger: logger)
        for try await row in rows {
            var cells = RowReader(row)
            return OwnedContent(createdBy: try cells.next("author_id"), createdAt: try cells.next("created_at"))
        }
        guard try await PostStore.postExists(postId, in: communityId, on: connection, logger: logger) else {
            throw FeedErrors.postNotFound
        }
        throw FeedErrors.commentNotFound
    }

    /// A linked event must be one of this community's (`400`, naming the field, otherwise).
    static func checkEvent(
        _ eventId: UUID?, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let eventId else { return }
        let found = try await connection.query(
            """
            SELECT 1 FROM events WHERE id = \(eventId) AND community_id = \(communityId) AND deleted_at IS NULL
            """, logger: logger
        ).collect().count
        guard found == 1 else { throw APIError.validation(["linkedEventId": "is not an event of this community"]) }
    }

    /// Only members may be mentioned: the others are refused by id (`400`, `mentions`).
    static func checkMentions(
        _ ids: [UUID], in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID] {
        guard !ids.isEmpty else { return [] }
        var members: Set<UUID> = []
        for try await id in try await connection.query(
            """
            SELECT user_id FROM members WHERE community_id = \(communityId) AND left_at IS NULL AND user_id = ANY(\(ids))
            """, logger: logger
        ).decode(UUID.self) {
            members.insert(id)
        }
        let strangers = ids.filter { !members.contains($0) }
        guard strangers.isEmpty else {
            throw APIError.validation([
                "mentions": "are not members of this community: "
                    + strangers.map(\.lowercasedString).joined(separator: ", ")
            ])
        }
        return ids
    }

    /// Records who a post or comment mentions; returns those it had never mentioned before
    /// (not its author), who are the ones to tell.
    static func recordMentions(
        _ ids: [UUID], in postId: UUID, subject: UUID, community: UUID, author: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [UUID] {
        let others = ids.filter { $0 != author }
        guard !others.isEmpty else { return [] }
        var told: [UUID] = []
        for try await id in try await connection.query(
            """
            INSERT INTO mentions (subject_id, user_id, community_id, post_id)
            SELECT \(subject), u, \(community), \(postId) FROM unnest(\(others)::uuid[]) AS u
            ON CONFLICT (subject_id, user_id) DO NOTHING
            RETURNING user_id
            """, logger: logger
        ).decode(UUID.self) {
            told.append(id)
        }
        return others.filter(told.contains)
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
