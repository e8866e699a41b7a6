import Foundation

/// A post was published: the community hears of it (an announcement as an announcement,
/// which may break through quiet hours), except its author and those it mentions, who hear
/// of the mention instead.
package struct PostCreated: MessagePayload, Equatable {
    package static let messageType = "post.created"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var postId: UUID
    package var authorId: UUID
    package var authorName: String
    package var type: PostType
    /// The start of the text (or the poll's question), for the notification's body.
    package var excerpt: String
    package var mentioned: [UUID]

    package init(
        communityId: UUID, communityName: String, postId: UUID, authorId: UUID, authorName: String, type: PostType,
        excerpt: String, mentioned: [UUID]
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.postId = postId
        self.authorId = authorId
        self.authorName = authorName
        self.type = type
        self.excerpt = excerpt
        self.mentioned = mentioned
    }
}

/// Someone commented on a post (or replied to a comment): the post's author hears of it, and
/// for a reply the comment's author too; never the commenter, never those the comment
/// mentions (they hear of the mention).
package struct CommentCreated: MessagePayload, Equatable {
    package static let messageType = "comment.created"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var postId: UUID
    package var commentId: UUID
    package var postAuthorId: UUID
    /// The author of the comment replied to, for a reply.
    package var parentAuthorId: UUID?
    package var authorId: UUID
    package var authorName: String
    package var excerpt: String
    package var mentioned: [UUID]

    package init(
        communityId: UUID, communityName: String, postId: UUID, commentId: UUID, postAuthorId: UUID,
        parentAuthorId: UUID?, authorId: UUID, authorName: String, excerpt: String, mentioned: [UUID]
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.postId = postId
        self.commentId = commentId
        self.postAuthorId = postAuthorId
        self.parentAuthorId = parentAuthorId
        self.authorId = authorId
        self.authorName = authorName
        self.excerpt = excerpt
        self.mentioned = mentioned
    }
}

/// Members were mentioned for the first time in a post or a comment (an edit that adds a
/// mention sends this for the new ones only; core keeps who was told, per post or comment).
package struct MembersMentioned: MessagePayload, Equatable {
    package static let messageType = "post.mentioned"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var postId: UUID
    /// The comment they were mentioned in, if not the post itself.
    package var commentId: UUID?
    package var authorId: UUID
    package var authorName: String
    package var excerpt: String
    package var userIds: [UUID]

    package init(
        communityId: UUID, communityName: String, postId: UUID, commentId: UUID?, authorId: UUID, authorName: String,
        excerpt: String, userIds: [UUID]
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.postId = postId
        self.commentId = commentId
        self.authorId = authorId
        self.authorName = authorName
        self.excerpt = excerpt
        self.userIds = userIds
    }
}

extension String {
    /// The start of a text for a notification: at most `limit` characters, on one line.
    package func excerpt(_ limit: Int = 120) -> String {
        let line = split(whereSeparator: \.isNewline).joined(separator: " ")
        return line.count <= limit ? line : String(line.prefix(limit - 1)) + "…"
    }
}
