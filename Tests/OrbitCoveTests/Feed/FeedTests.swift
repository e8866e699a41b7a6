import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// The feed through core's whole router, against the real PostgreSQL, Redis and RabbitMQ.
@Suite struct FeedTests {
    typealias Person = CoreHarness.Person

    static func post(
        _ api: CoreHarness, in club: Community, by person: Person, _ json: String
    ) async throws -> Post {
        let reply = try await api.call(.post, "/api/v1/communities/\(club.id)/posts", as: person, json: json)
        guard reply.status == .created else {
            throw TestFailure("post failed: \(reply.status) \(reply.errorCode ?? "") \(reply.fieldErrors)")
        }
        return try reply.data(Post.self)
    }

    static func feed(
        _ api: CoreHarness, of club: Community, as person: Person, query: String = ""
    ) async throws
        -> (items: [Post], next: String?)
    {
        let reply = try await api.call(.get, "/api/v1/communities/\(club.id)/posts\(query)", as: person)
        guard reply.status == .ok else { throw TestFailure("feed failed: \(reply.status) \(reply.errorCode ?? "")") }
        return try reply.page(Post.self)
    }

    @Test func postsAreReadNewestFirstWithPinsLeadingAndGoneWhenDeleted() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            var posted: [Post] = []
            for index in 0..<5 {
                posted.append(try await Self.post(api, in: club, by: ada, #"{"content":"Post \#(index)"}"#))
            }
            #expect(posted[0].author == ContentAuthor(userId: ada.id, displayName: "Ada", avatarUrl: nil))
            #expect(posted[0].type == .text && posted[0].commentCount == 0 && posted[0].myReaction == nil)
            #expect(abs(posted[0].editableUntil.timeIntervalSince(posted[0].createdAt) - 86_400) < 1)

            // Pages of two, newest first, then the oldest post pinned: it leads the first page only.
            var seen: [UUID] = []
            var page = try await Self.feed(api, of: club, as: coach, query: "?limit=2")
            seen += page.items.map(\.id)
            while let next = page.next {
                page = try await Self.feed(api, of: club, as: coach, query: "?limit=2&cursor=\(next)")
                seen += page.items.map(\.id)
            }
            #expect(seen == posted.reversed().map(\.id))
            let path = "/api/v1/communities/\(club.id)/posts"
            #expect(try await api.call(.post, "\(path)/\(posted[0].id)/pin", as: ada).status == .forbidden)
            let pinned = try await api.call(.post, "\(path)/\(posted[0].id)/pin", as: coach).data(Post.self)
            #expect(pinned.isPinned)
            let first = try await Self.feed(api, of: club, as: ada, query: "?limit=2")
            #expect(first.items.map(\.id) == [posted[0].id, posted[4].id, posted[3].id])
            var all: [UUID] = first.items.map(\.id)
            var next = first.next
            while let cursor = next {
                let more = try await Self.feed(api, of: club, as: ada, query: "?limit=2&cursor=\(cursor)")
                all += more.items.map(\.id)
                next = more.next
            }
            #expect(all.count == 5 && Set(all).count == 5)

            // The author deletes one; an outsider and another community see nothing of it.
            #expect(try await api.call(.delete, "\(path)/\(posted[2].id)", as: ada).status == .noContent)
            #expect(try await api.call(.get, "\(path)/\(posted[2].id)", as: ada).errorCode == "POST_NOT_FOUND")
            #expect(try await Self.feed(api, of: club, as: coach).items.count == 4)
            let eve = try await api.signIn("Eve")
            let lions = try await api.community(by: eve)
            let elsewhere = "/api/v1/communities/\(lions.id)/posts/\(posted[1].id)"
            #expect(try await api.call(.get, elsewhere, as: eve).errorCode == "POST_NOT_FOUND")
            #expect(
                try await api.call(.post, "\(elsewhere)/reactions", as: eve, json: #"{"type":"like"}"#).errorCode
                    == "POST_NOT_FOUND")
            #expect(try await api.call(.get, "\(path)/\(posted[1].id)", as: eve).errorCode == "COMMUNITY_NOT_FOUND")
        }
    }

    /// An author who left is still named on their posts and comments (fellow members'
    /// names alone would hide them); one whose account was deleted is "[Deleted User]".
    @Test func authorsWhoLeftAreStillNamedAndDeletedAccountsAreNot() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            try await api.join(ben, club, invitedBy: coach)
            let post = try await Self.post(api, in: club, by: ada, #"{"content":"Bye all"}"#)
            let path = "/api/v1/communities/\(club.id)/posts/\(post.id)"
            _ = try await api.call(.post, "\(path)/comments", as: ben, json: #"{"content":"Bye!"}"#)
            #expect(try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: ada).status == .noContent)
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE users SET display_name = '[Deleted User]', avatar_url = NULL WHERE id = \(ben.id)",
                        logger: TestEnvironment.logger)
                }
            }
            let detail = try await api.call(.get, path, as: coach).data(PostDetail.self)
            #expect(detail.post.author.displayName == "Ada")
            #expect(detail.comments.map(\.author.displayName) == ["[Deleted User]"])
            // Ada, no longer a member, reads nothing of the community.
            #expect(try await api.call(.get, path, as: ada).errorCode == "COMMUNITY_NOT_FOUND")
        }
    }

    @Test func authorsEditTheirOwnPostsForADayAndAdminsAnyPost() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            try await api.join(ben, club, invitedBy: coach)
            let post = try await Self.post(api, in: club, by: ada, #"{"content":"Snacks on Saturday"}"#)
            let path = "/api/v1/communities/\(club.id)/posts/\(post.id)"
            let edited = try await api.call(.patch, path, as: ada, json: #"{"content":"Snacks on Sunday"}"#)
            #expect(try edited.data(Post.self).content == "Snacks on Sunday")
            #expect(try await api.call(.patch, path, as: ben, json: #"{"content":"x"}"#).status == .forbidden)
            #expect(try await api.call(.delete, path, as: ben).status == .forbidden)
            #expect(
                try await api.call(.patch, path, as: ada, json: #"{"clear":["content"]}"#).fieldErrors.keys.sorted()
                    == ["content"])
            // A day later only an admin may.
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE posts SET created_at = created_at - interval '25 hours' WHERE id = \(post.id)",
                        logger: TestEnvironment.logger)
                }
            }
            #expect(try await api.call(.patch, path, as: ada, json: #"{"content":"late"}"#).status == .forbidden)
            #expect(try await api.call(.patch, path, as: coach, json: #"{"content":"Fixed"}"#).status == .ok)
            #expect(try await api.call(.delete, path, as: coach).status == .noContent)
        }
    }

    /// Every kind of bad input is refused by name, with nothing stored.
    @Test func badInputIsRefusedByNameAndNothingIsStored() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, eve) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Eve")
            )
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let lions = try await api.community(by: eve)
            let theirEvent = try await api.call(
                .post, "/api/v1/communities/\(lions.id)/events", as: eve,
                json: #"{"title":"Game","startsAt":"2031-05-01T15:00:00Z"}"#
            ).data(CalendarEvent.self)
            let path = "/api/v1/communities/\(club.id)/posts"
            let options = (0..<21).map { "\"o\($0)\"" }.joined(separator: ",")
            let long = String(repeating: "😀", count: FeedLimits.postLength + 1)
            let cases: [(String, String)] = [
                (#"{"type":"story","content":"x"}"#, "type"),
                (#"{"type":"poll","pollData":{"question":"Q","options":["a"]}}"#, "pollData.options"),
                (#"{"type":"poll","pollData":{"question":"Q","options":[\#(options)]}}"#, "pollData.options"),
                (#"{"type":"poll","pollData":{"question":"Q","options":["a","a"]}}"#, "pollData.options"),
                (
                    #"{"type":"poll","pollData":{"question":"Q","options":["a","b"],"closesAt":"2001-01-01T00:00:00Z"}}"#,
                    "pollData.closesAt"
                ),
                (#"{"type":"text","content":"x","pollData":{"question":"Q","options":["a","b"]}}"#, "pollData"),
                (#"{"content":"\#(long)"}"#, "content"),
                (#"{"type":"event_share","linkedEventId":"\#(theirEvent.id)"}"#, "linkedEventId"),
                (#"{"type":"event_share"}"#, "linkedEventId"),
                (#"{"content":"hi","mentions":["\#(eve.id)"]}"#, "mentions"),
                (#"{"type":"photo"}"#, "mediaUrls"),
                (#"{"type":"photo","mediaUrls":["ftp://x/y.jpg"]}"#, "mediaUrls"),
                (#"{"type":"photo","mediaUrls":["https://x.test/a\u0000b.jpg"]}"#, "mediaUrls"),
                (#"{"content":"hi","colour":"red"}"#, "colour"),
            ]
            for (body, field) in cases {
                let reply = try await api.call(.post, path, as: ada, json: body)
                #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(body)")
                #expect(reply.fieldErrors[field] != nil, "\(body): \(reply.fieldErrors)")
            }
            // A hostile client's requests: crafted cursors, huge numbers, wrong types and
            // content types, a key named twice. Each a 4xx in the envelope.
            for query in ["?cursor=AAAA", "?limit=99999999999999999999", "?q=kit&cursor=c2VhcmNofDEwMDAwMDB8eA"] {
                #expect(
                    try await api.call(.get, "\(path)\(query)", as: ada).errorCode == "VALIDATION_FAILED", "\(query)")
            }
            #expect(try await api.call(.post, path, as: ada, json: "[1,2]").errorCode == "VALIDATION_FAILED")
            #expect(
                try await api.call(.post, path, as: ada, json: #"{"content":"a","content":"b"}"#).errorCode
                    == "VALIDATION_FAILED")
            #expect(
                try await api.call(
                    .post, path, as: ada, json: #"{"content":"a"}"#, headers: [.contentType: "text/plain"]
                ).status == .unsupportedMediaType)
            #expect(try await api.call(.get, "\(path)/not-an-id", as: ada).errorCode == "POST_NOT_FOUND")
            let nul = try await api.call(.get, "\(path)?q=a%00b", as: ada)
            #expect(nul.status == .badRequest && nul.fieldErrors["q"] != nil)
            // The mention names whom it refuses.
            let refused = try await api.call(.post, path, as: ada, json: #"{"content":"hi","mentions":["\#(eve.id)"]}"#)
            #expect(refused.fieldErrors["mentions"]?.contains(eve.id.lowercasedString) == true)
            // Exactly at the limit, counted as PostgreSQL counts (each emoji one character), is fine.
            let atLimit = String(repeating: "😀", count: FeedLimits.postLength)
            _ = try await Self.post(api, in: club, by: ada, #"{"content":"\#(atLimit)"}"#)
            #expect(try await Self.feed(api, of: club, as: ada).items.count == 1)

            let poll = try await Self.post(
                api, in: club, by: ada, #"{"type":"poll","pollData":{"question":"Party?","options":["Fri","Sat"]}}"#)
            let pollPath = "\(path)/\(poll.id)"
            for (body, field) in [
                (#"{"optionIndexes":[2]}"#, "optionIndexes"), (#"{"optionIndexes":[0,1]}"#, "optionIndexes"),
                (#"{"optionIndexes":[]}"#, "optionIndexes"), (#"{"optionIndexes":["a"]}"#, "optionIndexes"),
            ] {
                let reply = try await api.call(.post, "\(pollPath)/votes", as: ada, json: body)
                #expect(reply.fieldErrors[field] != nil, "\(body)")
            }
            #expect(
                try await api.call(.post, "\(pollPath)/reactions", as: ada, json: #"{"type":"wow"}"#)
                    .fieldErrors["type"] != nil)
            let text = try await Self.post(api, in: club, by: ada, #"{"content":"plain"}"#)
            #expect(
                try await api.call(.post, "\(path)/\(text.id)/votes", as: ada, json: #"{"optionIndexes":[0]}"#)
                    .errorCode == "NOT_A_POLL")
            // Comments: a reply to a reply, a parent from another post, too long.
            let comment = try await api.call(.post, "\(pollPath)/comments", as: ada, json: #"{"content":"Sat!"}"#)
                .data(OrbitCoveModels.Comment.self)
            let reply = try await api.call(
                .post, "\(pollPath)/comments", as: coach, json: #"{"content":"Yes","parentId":"\#(comment.id)"}"#
            ).data(OrbitCoveModels.Comment.self)
            #expect(reply.parentId == comment.id)
            let nested = try await api.call(
                .post, "\(pollPath)/comments", as: ada, json: #"{"content":"No","parentId":"\#(reply.id)"}"#)
            #expect(nested.fieldErrors["parentId"] != nil)
            let foreign = try await api.call(
                .post, "\(path)/\(text.id)/comments", as: ada, json: #"{"content":"x","parentId":"\#(comment.id)"}"#)
            #expect(foreign.fieldErrors["parentId"] != nil)
            let tooLong = String(repeating: "a", count: FeedLimits.commentLength + 1)
            #expect(
                try await api.call(.post, "\(pollPath)/comments", as: ada, json: #"{"content":"\#(tooLong)"}"#)
                    .fieldErrors["content"] != nil)
            let thread = try await api.call(.get, "\(pollPath)/comments", as: ada).page(OrbitCoveModels.Comment.self)
            #expect(thread.items.map(\.id) == [comment.id, reply.id])
        }
    }

    @Test func pollsCountEachChoiceAndCloseOnTime() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            try await api.join(ben, club, invitedBy: coach)
            let single = try await Self.post(
                api, in: club, by: coach,
                #"{"type":"poll","content":"End of season","pollData":{"question":"When?","options":["Fri","Sat","Sun"],"closesAt":"2099-01-01T00:00:00Z"}}"#
            )
            let path = "/api/v1/communities/\(club.id)/posts/\(single.id)"
            _ = try await api.call(.post, "\(path)/votes", as: ada, json: #"{"optionIndexes":[1]}"#)
            var poll = try #require(
                try await api.call(.post, "\(path)/votes", as: ben, json: #"{"optionIndexes":[1]}"#).data(Post.self)
                    .poll)
            #expect(poll.options.map(\.votes) == [0, 2, 0] && poll.voterCount == 2 && poll.myVotes == [1])
            // Ada changes her mind: still one vote each.
            poll = try #require(
                try await api.call(.post, "\(path)/votes", as: ada, json: #"{"optionIndexes":[2]}"#).data(Post.self)
                    .poll)
            #expect(poll.options.map(\.votes) == [0, 1, 1] && poll.voterCount == 2 && poll.myVotes == [2])

            let multiple = try await Self.post(
                api, in: club, by: coach,
                #"{"type":"poll","pollData":{"question":"Snacks?","options":["Fruit","Cake","Juice"],"allowMultiple":true}}"#
            )
            let multiPath = "/api/v1/communities/\(club.id)/posts/\(multiple.id)"
            poll = try #require(
                try await api.call(.post, "\(multiPath)/votes", as: ada, json: #"{"optionIndexes":[0,2]}"#)
                    .data(Post.self).poll)
            #expect(poll.options.map(\.votes) == [1, 0, 1] && poll.voterCount == 1 && poll.myVotes == [0, 2])
            poll = try #require(try await api.call(.delete, "\(multiPath)/votes", as: ada).data(Post.self).poll)
            #expect(poll.options.map(\.votes) == [0, 0, 0] && poll.voterCount == 0 && poll.myVotes.isEmpty)

            // Closed: no more votes or changes; the results stay.
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        """
                        UPDATE posts SET poll_data = jsonb_set(poll_data, '{closesAt}', '"2001-01-01T00:00:00.000Z"')
                        WHERE id = \(single.id)
                        """, logger: TestEnvironment.logger)
                }
            }
            let late = try await api.call(.post, "\(path)/votes", as: coach, json: #"{"optionIndexes":[0]}"#)
            #expect(late.status == .conflict && late.errorCode == "POLL_CLOSED")
            let closed = try #require(try await api.call(.get, path, as: coach).data(PostDetail.self).post.poll)
            #expect(closed.isClosed && closed.options.map(\.votes) == [0, 1, 1])
        }
    }

    @Test func atMostFivePostsArePinnedAndExpiredPinsStopLeading() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            var made: [Post] = []
            for index in 0..<7 {
                made.append(try await Self.post(api, in: club, by: coach, #"{"content":"\#(index)"}"#))
            }
            let posts = made
            let path = "/api/v1/communities/\(club.id)/posts"
            for post in posts.prefix(5) {
                #expect(try await api.call(.post, "\(path)/\(post.id)/pin", as: coach).status == .ok)
            }
            let sixth = try await api.call(.post, "\(path)/\(posts[5].id)/pin", as: coach)
            #expect(sixth.status == .conflict && sixth.errorCode == "PIN_LIMIT_REACHED")
            // Pinning a pinned post again only moves its end.
            let again = try await api.call(
                .post, "\(path)/\(posts[0].id)/pin", as: coach, json: #"{"pinnedUntil":"2099-01-01T00:00:00Z"}"#)
            #expect(try again.data(Post.self).pinnedUntil != nil)
            let past = try await api.call(
                .post, "\(path)/\(posts[5].id)/pin", as: coach, json: #"{"pinnedUntil":"2001-01-01T00:00:00Z"}"#)
            #expect(past.fieldErrors["pinnedUntil"] != nil)
            #expect(try await api.call(.delete, "\(path)/\(posts[1].id)/pin", as: coach).status == .ok)
            #expect(try await api.call(.post, "\(path)/\(posts[5].id)/pin", as: coach).status == .ok)
            // A pin whose time is up no longer leads, and frees its place.
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE posts SET pinned_until = NOW() - interval '1 minute' WHERE id = \(posts[0].id)",
                        logger: TestEnvironment.logger)
                }
            }
            let first = try await Self.feed(api, of: club, as: coach, query: "?limit=20")
            let leading = first.items.prefix { $0.isPinned }.map(\.id)
            #expect(Set(leading) == Set([posts[2].id, posts[3].id, posts[4].id, posts[5].id]))
            #expect(first.items.count == 7)
            #expect(try await api.call(.post, "\(path)/\(posts[6].id)/pin", as: coach).status == .ok)
        }
    }

    @Test func commentsAreEditedByTheirAuthorsAndRemovedByAdmins() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            try await api.join(ben, club, invitedBy: coach)
            let post = try await Self.post(api, in: club, by: ada, #"{"content":"Who drives?"}"#)
            let path = "/api/v1/communities/\(club.id)/posts/\(post.id)"
            let mine = try await api.call(.post, "\(path)/comments", as: ben, json: #"{"content":"I can"}"#)
                .data(OrbitCoveModels.Comment.self)
            let other = try await api.call(.post, "\(path)/comments", as: ada, json: #"{"content":"Thanks"}"#)
                .data(OrbitCoveModels.Comment.self)
            #expect(try await api.call(.get, path, as: ada).data(PostDetail.self).post.commentCount == 2)
            let edited = try await api.call(
                .patch, "\(path)/comments/\(mine.id)", as: ben, json: #"{"content":"I can!"}"#)
            #expect(try edited.data(OrbitCoveModels.Comment.self).content == "I can!")
            #expect(
                try await api.call(.patch, "\(path)/comments/\(other.id)", as: ben, json: #"{"content":"x"}"#)
                    .status == .forbidden)
            #expect(try await api.call(.delete, "\(path)/comments/\(other.id)", as: ben).status == .forbidden)
            #expect(try await api.call(.delete, "\(path)/comments/\(mine.id)", as: coach).status == .noContent)
            #expect(
                try await api.call(.delete, "\(path)/comments/\(mine.id)", as: coach).errorCode == "COMMENT_NOT_FOUND")
            let detail = try await api.call(.get, path, as: ada).data(PostDetail.self)
            #expect(detail.post.commentCount == 1 && detail.comments.map(\.id) == [other.id])
            // A deleted post takes its comments with it.
            #expect(try await api.call(.delete, path, as: ada).status == .noContent)
            #expect(try await api.call(.get, "\(path)/comments", as: ada).errorCode == "POST_NOT_FOUND")
        }
    }

    /// Fifty members reacting and changing their reactions at once: the counts equal a
    /// `GROUP BY` over the rows at the end, and each answer's counts were a consistent state.
    @Test func reactionCountsStayExactUnderFiftyConcurrentReactors() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_WRITES_PER_MINUTE": "100000"]) { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            var people: [Person] = []
            for index in 0..<50 {
                let person = try await api.signIn("R\(index)")
                try await api.join(person, club, invitedBy: coach)
                people.append(person)
            }
            let post = try await Self.post(api, in: club, by: coach, #"{"content":"Champions!"}"#)
            let path = "/api/v1/communities/\(club.id)/posts/\(post.id)/reactions"
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, person) in people.enumerated() {
                    group.addTask {
                        let types = ReactionType.allCases
                        for step in 0..<4 {
                            let type = types[(index + step) % types.count]
                            let reply =
                                step == 3 && index % 5 == 0
                                ? try await api.call(.delete, path, as: person)
                                : try await api.call(.post, path, as: person, json: #"{"type":"\#(type.rawValue)"}"#)
                            guard reply.status == .ok else { throw TestFailure("reaction: \(reply.status)") }
                            let summary = try reply.data(ReactionSummary.self)
                            let total = ReactionType.allCases.reduce(0) { $0 + summary.reactionCounts[$1] }
                            guard (0...50).contains(total) else { throw TestFailure("total \(total)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            var expected = ReactionCounts()
            for index in 0..<50 where index % 5 != 0 {
                expected[ReactionType.allCases[(index + 3) % 4]] += 1
            }
            let counts = try await api.call(.get, "/api/v1/communities/\(club.id)/posts/\(post.id)", as: coach)
                .data(PostDetail.self).post.reactionCounts
            #expect(counts == expected)
            try await withTestDatabase { db in
                let grouped = try await db.transaction(scope: .system) { connection in
                    var counts = ReactionCounts()
                    for try await (type, count) in try await connection.query(
                        "SELECT type::text, count(*)::int8 FROM reactions WHERE post_id = \(post.id) GROUP BY type",
                        logger: TestEnvironment.logger
                    ).decode((String, Int).self) {
                        counts[try #require(ReactionType(rawValue: type))] = count
                    }
                    return counts
                }
                #expect(grouped == counts)
            }
        }
    }

    /// A sync section's rows, created and updated.
    static func rows(_ section: Any?) -> [[String: Any]] {
        let section = section as? [String: Any]
        return (section?["created"] as? [[String: Any]] ?? []) + (section?["updated"] as? [[String: Any]] ?? [])
    }

    @Test func aPostsRowsShowInSyncAndAPostLeavesItWhenDeleted() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            let post = try await Self.post(api, in: club, by: coach, #"{"content":"Kit day"}"#)
            let sync = "/api/v1/communities/\(club.id)/sync"
            let first = try await api.call(.get, sync, as: ada)
            let data = try #require(first.json?["data"] as? [String: Any])
            let posts = Self.rows(data["posts"])
            #expect(posts.map { $0["id"] as? String } == [post.id.lowercasedString])
            let token = try #require(data["syncToken"] as? String)
            _ = try await api.call(
                .post, "/api/v1/communities/\(club.id)/posts/\(post.id)/comments", as: ada, json: #"{"content":"!"}"#)
            let after = try await api.call(.get, "\(sync)?since=\(token)", as: ada)
            let changed = Self.rows((after.json?["data"] as? [String: Any])?["posts"])
            #expect(changed.count == 1 && changed.first?["commentCount"] as? Int == 1)
            let token2 = try #require((after.json?["data"] as? [String: Any])?["syncToken"] as? String)
            #expect(
                try await api.call(.delete, "/api/v1/communities/\(club.id)/posts/\(post.id)", as: coach).status
                    == .noContent)
            let gone = try await api.call(.get, "\(sync)?since=\(token2)", as: ada)
            let deleted = ((gone.json?["data"] as? [String: Any])?["posts"] as? [String: Any])?["deleted"] as? [String]
            #expect(deleted == [post.id.lowercasedString])
        }
    }
}
