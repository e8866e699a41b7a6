import Foundation

/// What a post is: the seed's `post_type`.
package enum PostType: String, Codable, Sendable, CaseIterable {
    case text
    case photo
    case announcement
    case poll
    case eventShare = "event_share"
}

/// The four reactions a post takes: the seed's `reaction_type`.
package enum ReactionType: String, Codable, Sendable, CaseIterable {
    case like
    case love
    case laugh
    case celebrate
}

/// Who wrote a post or a comment, as the reader sees them: "[Deleted User]" once the account
/// is gone (the retention job writes that name).
package struct ContentAuthor: Codable, Sendable, Equatable {
    package var userId: UUID
    package var displayName: String
    @ExplicitNull package var avatarUrl: String?

    package init(userId: UUID, displayName: String, avatarUrl: String?) {
        self.userId = userId
        self.displayName = displayName
        self.avatarUrl = avatarUrl
    }
}

/// How many of each reaction a post has.
package struct ReactionCounts: Codable, Sendable, Equatable {
    package var like = 0
    package var love = 0
    package var laugh = 0
    package var celebrate = 0

    package init(like: Int = 0, love: Int = 0, laugh: Int = 0, celebrate: Int = 0) {
        self.like = like
        self.love = love
        self.laugh = laugh
        self.celebrate = celebrate
    }

    package subscript(type: ReactionType) -> Int {
        get {
            switch type {
            case .like: like
            case .love: love
            case .laugh: laugh
            case .celebrate: celebrate
            }
        }
        set {
            switch type {
            case .like: like = newValue
            case .love: love = newValue
            case .laugh: laugh = newValue
            case .celebrate: celebrate = newValue
            }
        }
    }
}

/// One choice of a poll and how many have chosen it.
package struct PollOption: Codable, Sendable, Equatable {
    package var text: String
    package var votes: Int

    package init(text: String, votes: Int) {
        self.text = text
        self.votes = votes
    }
}

/// A poll post's question, choices and results, with the reader's own choices.
package struct Poll: Codable, Sendable, Equatable {
    package var question: String
    package var options: [PollOption]
    package var allowMultiple: Bool
    @ExplicitNull package var closesAt: Date?
    package var isClosed: Bool
    /// How many members have voted (each counted once, whatever they chose).
    package var voterCount: Int
    /// The indexes the reader chose, in order.
    package var myVotes: [Int]

    package init(
        question: String, options: [PollOption], allowMultiple: Bool, closesAt: Date?, isClosed: Bool,
        voterCount: Int, myVotes: [Int]
    ) {
        self.question = question
        self.options = options
        self.allowMultiple = allowMultiple
        self.closesAt = closesAt
        self.isClosed = isClosed
        self.voterCount = voterCount
        self.myVotes = myVotes
    }
}

/// A post as a member reads it in the feed.
package struct Post: Codable, Sendable, Equatable {
    package var id: UUID
    package var communityId: UUID
    package var author: ContentAuthor
    package var type: PostType
    @ExplicitNull package var content: String?
    package var mediaUrls: [String]
    /// Photos uploaded to this community (`GET /api/v1/media/{id}` serves each).
    package var mediaIds: [UUID]
    /// The members the text mentions, by user id (clients render them).
    package var mentions: [UUID]
    @ExplicitNull package var linkedEventId: UUID?
    @ExplicitNull package var poll: Poll?
    package var reactionCounts: ReactionCounts
    @ExplicitNull package var myReaction: ReactionType?
    package var commentCount: Int
    package var isPinned: Bool
    @ExplicitNull package var pinnedUntil: Date?
    package var isAnnouncement: Bool
    /// Until when the author may still edit or delete it (admins always may).
    package var editableUntil: Date
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, communityId: UUID, author: ContentAuthor, type: PostType, content: String?, mediaUrls: [String],
        mediaIds: [UUID] = [], mentions: [UUID], linkedEventId: UUID?, poll: Poll?, reactionCounts: ReactionCounts,
        myReaction: ReactionType?,
        commentCount: Int, isPinned: Bool, pinnedUntil: Date?, isAnnouncement: Bool, editableUntil: Date,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.author = author
        self.type = type
        self.content = content
        self.mediaUrls = mediaUrls
        self.mediaIds = mediaIds
        self.mentions = mentions
        self.linkedEventId = linkedEventId
        self.poll = poll
        self.reactionCounts = reactionCounts
        self.myReaction = myReaction
        self.commentCount = commentCount
        self.isPinned = isPinned
        self.pinnedUntil = pinnedUntil
        self.isAnnouncement = isAnnouncement
        self.editableUntil = editableUntil
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A comment on a post, or a reply to one (one level: `parentId` is a top-level comment).
package struct Comment: Codable, Sendable, Equatable {
    package var id: UUID
    package var postId: UUID
    @ExplicitNull package var parentId: UUID?
    package var author: ContentAuthor
    package var content: String
    package var mentions: [UUID]
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, postId: UUID, parentId: UUID?, author: ContentAuthor, content: String, mentions: [UUID],
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.postId = postId
        self.parentId = parentId
        self.author = author
        self.content = content
        self.mentions = mentions
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `GET …/posts/{postId}`: the post and the first page of its comments, oldest first.
package struct PostDetail: Codable, Sendable, Equatable {
    package var post: Post
    package var comments: [Comment]
    /// Where `GET …/posts/{postId}/comments?cursor=` goes on; null when there is no more.
    @ExplicitNull package var commentsNextCursor: String?

    package init(post: Post, comments: [Comment], commentsNextCursor: String?) {
        self.post = post
        self.comments = comments
        self.commentsNextCursor = commentsNextCursor
    }
}

/// What a reaction's change leaves: the post's counts and the reader's own reaction.
package struct ReactionSummary: Codable, Sendable, Equatable {
    package var postId: UUID
    package var reactionCounts: ReactionCounts
    @ExplicitNull package var myReaction: ReactionType?

    package init(postId: UUID, reactionCounts: ReactionCounts, myReaction: ReactionType?) {
        self.postId = postId
        self.reactionCounts = reactionCounts
        self.myReaction = myReaction
    }
}

/// The feed's limits, counted as PostgreSQL counts text (Unicode scalars).
package enum FeedLimits {
    package static let postLength = 10_000
    package static let commentLength = 2_000
    package static let pollQuestionLength = 300
    package static let pollOptionLength = 100
    package static let pollOptions = 2...20
    package static let mediaUrls = 10
    package static let mentions = 50
    /// At most this many posts are pinned in a community at once.
    package static let pins = 5
}
