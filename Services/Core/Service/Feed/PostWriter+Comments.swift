import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Comments and replies (one level deep).
extension PostWriter {
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
                var parent: (author: UUID, parentId: UUID?)?
                for try await row in parents {
                    var cells = RowReader(row)
                    parent = (try cells.next("author_id"), try cells.next("parent_id"))
                }
                guard let parent else {
                    throw APIError.validation(["parentId": "is not a comment on this post"])
                }
                guard parent.parentId == nil else { throw FeedErrors.replyToReply }
                parentAuthor = parent.author
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
            guard let changed else {
                throw try await connection.refusal(
                    of: commentId, in: .comments, gone: FeedErrors.commentNotFound, logger: logger)
            }
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
            guard removed == 1 else {
                throw try await connection.refusal(
                    of: commentId, in: .comments, gone: FeedErrors.commentNotFound, logger: logger)
            }
            change.touched(removed)
            if granted.userId != owned.createdBy {
                change.audit(
                    "comment.deleted", target: ("comment", commentId),
                    metadata: ["postId": .string(postId.lowercasedString)])
            }
        }
    }
}
