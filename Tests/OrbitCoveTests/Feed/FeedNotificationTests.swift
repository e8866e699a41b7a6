import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Who hears of the feed: a post reaches every member but its author and those it mentions
/// (they hear of the mention); an announcement is an announcement; a comment reaches the
/// post's author and, for a reply, the comment's; a mention is told once per post or comment,
/// an edit telling only those it adds.
@Suite struct FeedNotificationTests {
    @Test func postsCommentsAndMentionsReachTheRightPeopleOnce() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, ada, ben, cy) = (
                    try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                    try await api.signIn("Cy")
                )
                let club = try await api.community(by: coach)
                for person in [ada, ben, cy] { try await api.join(person, club, invitedBy: coach) }
                let path = "/api/v1/communities/\(club.id)/posts"

                // A post mentioning Ben: Coach and Cy hear of the post, Ben of the mention only.
                let post = try await FeedTests.post(
                    api, in: club, by: ada, #"{"content":"Lift to the game?","mentions":["\#(ben.id)"]}"#)
                #expect(try await harness.settled(coach, .newPost, count: 1))
                #expect(try await harness.settled(cy, .newPost, count: 1))
                #expect(try await harness.settled(ben, .newPost, count: 0))
                #expect(try await harness.settled(ben, .mention, count: 1))
                #expect(try await harness.settled(ada, .newPost, count: 0))
                let told = try #require(try await harness.history(of: coach).first { $0.type == .newPost })
                #expect(told.title == "Ada posted in \(club.name)" && told.body == "Lift to the game?")
                #expect(told.data["postId"] == .string(post.id.lowercasedString))

                // Editing: Ben again and Cy added; only Cy hears, once.
                let edited = try await api.call(
                    .patch, "\(path)/\(post.id)", as: ada, json: #"{"mentions":["\#(ben.id)","\#(cy.id)"]}"#)
                #expect(try edited.data(Post.self).mentions == [ben.id, cy.id])
                #expect(try await harness.settled(cy, .mention, count: 1))
                #expect(try await harness.settled(ben, .mention, count: 1))
                _ = try await api.call(.patch, "\(path)/\(post.id)", as: ada, json: #"{"content":"Lift?"}"#)
                #expect(try await harness.settled(cy, .mention, count: 1))

                // A comment by Ben: Ada (the post's author) hears of it. Cy replies to Ben's
                // comment: Ben hears of the reply, Ada of a comment on her post.
                let comment = try await api.call(
                    .post, "\(path)/\(post.id)/comments", as: ben, json: #"{"content":"I can take two"}"#
                ).data(OrbitCoveModels.Comment.self)
                #expect(try await harness.settled(ada, .postComment, count: 1))
                _ = try await api.call(
                    .post, "\(path)/\(post.id)/comments", as: cy,
                    json: #"{"content":"Thanks!","parentId":"\#(comment.id)"}"#)
                #expect(try await harness.settled(ben, .postComment, count: 1))
                #expect(try await harness.settled(ada, .postComment, count: 2))
                #expect(try await harness.settled(cy, .postComment, count: 0))
                #expect(try await harness.settled(coach, .postComment, count: 0))

                // An announcement is its own type (members may let it through quiet hours);
                // a member may not make one.
                let refused = try await api.call(
                    .post, path, as: ada, json: #"{"type":"announcement","content":"No practice"}"#)
                #expect(refused.status == .forbidden)
                _ = try await FeedTests.post(
                    api, in: club, by: coach, #"{"type":"announcement","content":"No practice today"}"#)
                #expect(try await harness.settled(ada, .announcement, count: 1))
                #expect(try await harness.settled(coach, .announcement, count: 0))
                #expect(try await harness.settled(ada, .newPost, count: 0))
            }
        }
    }
}
