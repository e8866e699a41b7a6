import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A post's row as every read returns it: the post, its author as the reader may see them,
/// its counts (summed over its `post_counts` slots), the reader's own reaction and, for a
/// poll, the votes per option and the reader's own. Read inside a transaction entered as the
/// reader (`app_current_user_id()` is the reader), cell by cell with ``RowReader``.
///
/// ```swift
/// SELECT \(unescaped: PostRows.columns) FROM posts p \(unescaped: PostRows.joins) WHERE ...
/// ```
enum PostRows {
    static let columns = """
        p.id, p.community_id, p.author_id, coalesce(a.display_name, '[Deleted User]') AS author_name,
        a.avatar_url AS author_avatar, p.type::text AS type, p.content,
        ARRAY(SELECT jsonb_array_elements_text(p.media_urls)) AS media_urls, p.media_ids,
        p.mentions, p.linked_event_id, p.poll_data::text AS poll_data,
        (p.is_pinned AND (p.pinned_until IS NULL OR p.pinned_until > NOW())) AS is_pinned, p.pinned_until,
        p.is_announcement, coalesce(p.editable_until, p.created_at + interval '24 hours') AS editable_until,
        p.created_at, p.updated_at, coalesce(n.likes, 0) AS likes, coalesce(n.loves, 0) AS loves,
        coalesce(n.laughs, 0) AS laughs, coalesce(n.celebrates, 0) AS celebrates,
        coalesce(n.comments, 0) AS comments, r.type::text AS my_reaction, v.option_votes, v.voters, v.mine
        """

    static let joins = """
        LEFT JOIN LATERAL app_content_author(p.author_id, p.community_id) a ON TRUE
        LEFT JOIN LATERAL (
            SELECT sum(c.likes)::int8 AS likes, sum(c.loves)::int8 AS loves, sum(c.laughs)::int8 AS laughs,
                   sum(c.celebrates)::int8 AS celebrates, sum(c.comments)::int8 AS comments
            FROM post_counts c WHERE c.post_id = p.id
        ) n ON TRUE
        LEFT JOIN reactions r ON r.post_id = p.id AND r.user_id = app_current_user_id()
        LEFT JOIN LATERAL (
            SELECT ARRAY(
                       SELECT count(pv.user_id)::int8
                       FROM generate_series(0, jsonb_array_length(p.poll_data -> 'options') - 1) AS o(i)
                       LEFT JOIN poll_votes pv ON pv.post_id = p.id AND pv.option_index = o.i
                       GROUP BY o.i ORDER BY o.i) AS option_votes,
                   (SELECT count(DISTINCT pv.user_id)::int8 FROM poll_votes pv WHERE pv.post_id = p.id) AS voters,
                   ARRAY(SELECT pv.option_index::int8 FROM poll_votes pv
                         WHERE pv.post_id = p.id AND pv.user_id = app_current_user_id()
                         ORDER BY pv.option_index) AS mine
        ) v ON p.type = 'poll'
        """

    /// A poll as `posts.poll_data` keeps it: what was asked, not who answered.
    struct PollData: Codable, Sendable, Equatable {
        var question: String
        var options: [String]
        var allowMultiple: Bool
        var closesAt: Date?

        func isClosed(at now: Date) -> Bool { closesAt.map { $0 <= now } ?? false }
    }

    static func read(_ row: PostgresRow, now: Date = Date()) throws -> Post {
        var cells = RowReader(row)
        return try read(&cells, now: now)
    }

    /// Reads the ``columns`` from `cells`, leaving it at the next column.
    static func read(_ cells: inout RowReader, now: Date) throws -> Post {
        let id: UUID = try cells.next("id")
        let communityId: UUID = try cells.next("community_id")
        let author = ContentAuthor(
            userId: try cells.next("author_id"), displayName: try cells.next("author_name"),
            avatarUrl: try cells.next("author_avatar"))
        let type = PostType(rawValue: try cells.next("type")) ?? .text
        let content: String? = try cells.next("content")
        // A text array: Foundation's JSONDecoder cost tens of microseconds a row here.
        let mediaUrls: [String] = try cells.next("media_urls")
        let mediaIds: [UUID] = try cells.next("media_ids")
        let mentions: [UUID] = try cells.next("mentions")
        let linkedEventId: UUID? = try cells.next("linked_event_id")
        let pollText: String? = try cells.next("poll_data")
        let isPinned: Bool = try cells.next("is_pinned")
        let pinnedUntil: Date? = try cells.next("pinned_until")
        let isAnnouncement: Bool = try cells.next("is_announcement")
        let editableUntil: Date = try cells.next("editable_until")
        let createdAt: Date = try cells.next("created_at")
        let updatedAt: Date = try cells.next("updated_at")
        let counts = ReactionCounts(
            like: try cells.next("likes"), love: try cells.next("loves"), laugh: try cells.next("laughs"),
            celebrate: try cells.next("celebrates"))
        let commentCount: Int = try cells.next("comments")
        let myReaction = (try cells.next("my_reaction") as String?).flatMap(ReactionType.init(rawValue:))
        let optionVotes: [Int]? = try cells.next("option_votes")
        let voters: Int? = try cells.next("voters")
        let mine: [Int]? = try cells.next("mine")
        var poll: Poll?
        if type == .poll, let pollText {
            let data = try JSONCoding.decoder.decode(PollData.self, from: Data(pollText.utf8))
            let votes = optionVotes ?? []
            poll = Poll(
                question: data.question,
                options: data.options.enumerated().map { index, text in
                    PollOption(text: text, votes: index < votes.count ? votes[index] : 0)
                }, allowMultiple: data.allowMultiple, closesAt: data.closesAt, isClosed: data.isClosed(at: now),
                voterCount: voters ?? 0, myVotes: mine ?? [])
        }
        return Post(
            id: id, communityId: communityId, author: author, type: type, content: content, mediaUrls: mediaUrls,
            mediaIds: mediaIds, mentions: mentions, linkedEventId: linkedEventId, poll: poll, reactionCounts: counts,
            myReaction: myReaction, commentCount: commentCount, isPinned: isPinned,
            pinnedUntil: isPinned ? pinnedUntil : nil, isAnnouncement: isAnnouncement, editableUntil: editableUntil,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    /// A comment's row, with its author as the reader may see them.
    static let commentColumns = """
        c.id, c.post_id, c.parent_id, c.author_id, coalesce(a.display_name, '[Deleted User]') AS author_name,
        a.avatar_url AS author_avatar, c.content, c.mentions, c.created_at, c.updated_at
        """

    static let commentJoins = """
        JOIN posts p ON p.id = c.post_id
        LEFT JOIN LATERAL app_content_author(c.author_id, p.community_id) a ON TRUE
        """

    static func readComment(_ row: PostgresRow) throws -> Comment {
        var cells = RowReader(row)
        let id: UUID = try cells.next("id")
        let postId: UUID = try cells.next("post_id")
        let parentId: UUID? = try cells.next("parent_id")
        let author = ContentAuthor(
            userId: try cells.next("author_id"), displayName: try cells.next("author_name"),
            avatarUrl: try cells.next("author_avatar"))
        return Comment(
            id: id, postId: postId, parentId: parentId, author: author, content: try cells.next("content"),
            mentions: try cells.next("mentions"), createdAt: try cells.next("created_at"),
            updatedAt: try cells.next("updated_at"))
    }
}
