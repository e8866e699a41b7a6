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
            let mediaIds = try await MediaReferences.check(
                input.mediaIds ?? [], for: .post, in: community.id, field: "mediaIds", on: connection, logger: logger)
            let rows = try await connection.query(
                """
                INSERT INTO posts (community_id, author_id, type, content, media_urls, media_ids, is_announcement,
                                   linked_event_id, poll_data, mentions)
                VALUES (\(community.id), \(author), \(input.type.rawValue)::post_type, \(input.content.value),
                        \(media)::jsonb, \(mediaIds), \(input.type == .announcement), \(input.linkedEventId.value),
                        \(poll)::jsonb, \(mentions))
                RETURNING id, (SELECT u.display_name::text FROM users u WHERE u.id = author_id) AS author_name
                """, logger: logger)
            var created: (id: UUID, authorName: String)?
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
            check.checkShape(
                &problems, content: content,
                pictures: (input.mediaUrls ?? current.mediaUrls).count + (input.mediaIds ?? current.mediaIds).count)
            if current.type == .poll { problems["pollData"] = nil }
            if !problems.isEmpty { throw APIError.validation(problems) }
            try await Self.checkEvent(input.linkedEventId.value, in: community.id, on: connection, logger: logger)
            var mentions: [UUID]?
            if let wanted = input.mentions {
                mentions = try await Self.checkMentions(wanted, in: community.id, on: connection, logger: logger)
            }
            let media = try input.mediaUrls.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
            var mediaIds: [UUID]?
            if let wanted = input.mediaIds {
                mediaIds = try await MediaReferences.check(
                    wanted, for: .post, in: community.id, field: "mediaIds", on: connection, logger: logger)
            }
            let rows = try await connection.query(
                """
                UPDATE posts SET
                    content = CASE WHEN \(input.content.tag) = 'keep' THEN content ELSE \(input.content.value) END,
                    media_urls = coalesce(\(media)::jsonb, media_urls),
                    media_ids = coalesce(\(mediaIds), media_ids),
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
            guard let editorName else {
                throw try await connection.refusal(
                    of: postId, in: .posts, gone: FeedErrors.postNotFound, logger: logger)
            }
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
            return try await answer(postId, in: community.id, on: connection)
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
            guard removed == 1 else {
                throw try await connection.refusal(
                    of: postId, in: .posts, gone: FeedErrors.postNotFound, logger: logger)
            }
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
            try await connection.run("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
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
            guard pinned == 1 else {
                throw try await connection.refusal(
                    of: postId, in: .posts, gone: FeedErrors.postNotFound, logger: logger)
            }
            change.touched(pinned)
            change.audit(
                "post.pinned", target: ("post", postId),
                metadata: until.map { ["until": .string(JSONCoding.formatTimestamp($0))] } ?? [:])
            return try await answer(postId, in: community.id, on: connection)
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
            return try await answer(postId, in: community.id, on: connection)
        }
    }
}

extension PostWriter {
    /// The post as a write answers with it. Gone only when another request deleted it after this
    /// one read it without a lock (a vote, an unpin that matched no row): `404`, and the write
    /// goes back with its transaction.
    func answer(_ postId: UUID, in communityId: UUID, on connection: PostgresConnection) async throws -> Post {
        guard let post = try await PostStore.post(postId, in: communityId, on: connection, logger: logger) else {
            throw FeedErrors.postNotFound
        }
        return post
    }
}
