import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The steps the feed's writes share: finding what a request names, checking what it links.
extension PostWriter {
    struct OwnedPost {
        var owned: OwnedContent
        var type: PostType
        var content: String?
        var mediaUrls: [String]
        var mediaIds: [UUID]
        var linkedEventId: UUID?
    }

    static func owned(
        _ postId: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> OwnedPost {
        let rows = try await connection.query(
            """
            SELECT author_id, created_at, type::text AS type, content, media_urls::text AS media_urls, media_ids, linked_event_id
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
                owned: owned, type: type, content: content, mediaUrls: media, mediaIds: try cells.next("media_ids"),
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
        let members = try await MemberStore.currentMembers(ids, in: communityId, on: connection, logger: logger)
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
}
