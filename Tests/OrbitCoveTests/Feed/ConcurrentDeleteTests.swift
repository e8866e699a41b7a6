import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization
import Testing

/// Two deletes of the same post, comment or event at once (a retry after a lost answer, two
/// devices): one deletes it, the other is told it is not found. Found by a probe: the loser
/// heard `403 FORBIDDEN` ("You may not do this") about its author's own content, since its
/// write, guarded by `deleted_at IS NULL`, touched no row.
@Suite struct ConcurrentDeleteTests {
    /// Sends `path` `count` DELETEs at once; their statuses.
    static func deletes(
        _ api: CoreHarness, _ path: String, as person: CoreHarness.Person, count: Int = 6
    ) async throws -> [Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count { group.addTask { try await Int(api.call(.delete, path, as: person).status.code) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func theLoserOfTwoDeletesHearsNotFound() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let base = "/api/v1/communities/\(club.id)"
            for round in 0..<4 {
                let post = try await FeedTests.post(api, in: club, by: coach, #"{"content":"Round \#(round)"}"#)
                let comment = try await api.call(
                    .post, "\(base)/posts/\(post.id)/comments", as: coach, json: #"{"content":"Mine"}"#
                ).data(OrbitCoveModels.Comment.self)
                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match \#(round)","startsAt":"2031-06-0\#(round + 1)T18:00:00Z"}"#)
                for path in [
                    "\(base)/posts/\(post.id)/comments/\(comment.id)", "\(base)/posts/\(post.id)",
                    "\(base)/events/\(event.id)",
                ] {
                    let statuses = try await Self.deletes(api, path, as: coach)
                    #expect(statuses.count(where: { $0 == 204 }) == 1, "\(path): \(statuses)")
                    #expect(statuses.allSatisfy { $0 == 204 || $0 == 404 }, "\(path): \(statuses)")
                }
            }
        }
    }

    /// A poll deleted while a vote on it waits: the vote is `404 POST_NOT_FOUND` and leaves
    /// nothing behind. A hostile probe got `500` six times in ten: the vote read the post,
    /// wrote, then read the post again to answer with and found it gone.
    @Test func aVoteOnAPollDeletedWhileItWaitsIsNotFound() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let poll = try await FeedTests.post(
                api, in: club, by: coach, #"{"type":"poll","pollData":{"question":"When?","options":["Sat","Sun"]}}"#)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                // Ada's vote, not yet committed by another session: hers waits on it.
                let holder = try await HeldTransaction.start(
                    "INSERT INTO poll_votes (post_id, user_id, option_index) VALUES (\(poll.id), \(ada.id), 0)",
                    on: owner, rollBack: true)
                let vote = Task {
                    try await api.call(
                        .post, "/api/v1/communities/\(club.id)/posts/\(poll.id)/votes", as: ada,
                        json: #"{"optionIndexes":[0]}"#)
                }
                #expect(try await eventually { try await holder.isWaitedOn() })
                try await owner.systemQuery("UPDATE posts SET deleted_at = now() WHERE id = \(poll.id)")
                await holder.end()
                let reply = try await vote.value
                #expect(reply.status == .notFound && reply.errorCode == "POST_NOT_FOUND")
                let left = try await owner.systemQuery(
                    "SELECT count(*)::int FROM poll_votes WHERE post_id = \(poll.id)")
                #expect(try left.first?.decode(Int.self) == 0)
            }
        }
    }
}
