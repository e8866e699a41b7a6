import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// `GET …/posts?q=`: PostgreSQL full text search in the community's language, accents folded,
/// text without spaces found by its character pairs, anything a person types accepted.
@Suite struct FeedSearchTests {
    static func search(
        _ api: CoreHarness, _ club: Community, as person: CoreHarness.Person, _ query: String
    )
        async throws -> [Post]
    {
        let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
        let reply = try await api.call(.get, "/api/v1/communities/\(club.id)/posts?q=\(encoded)", as: person)
        guard reply.status == .ok else {
            throw TestFailure("search \(query): \(reply.status) \(reply.errorCode ?? "") \(reply.fieldErrors)")
        }
        return try reply.page(Post.self).items
    }

    @Test func germanPostsAreFoundByStemAndWithoutTheirAccents() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Trainer")
            let club = try await api.community(by: coach, settings: #"{"searchLanguage":"german"}"#)
            let match = try await FeedTests.post(
                api, in: club, by: coach, #"{"content":"Wir spielen morgen Fußball auf dem Übungsplatz"}"#)
            let other = try await FeedTests.post(api, in: club, by: coach, #"{"content":"Elternabend am Dienstag"}"#)
            #expect(try await Self.search(api, club, as: coach, "Fussball spielen").map(\.id) == [match.id])
            #expect(try await Self.search(api, club, as: coach, "ubungsplatz").map(\.id) == [match.id])
            #expect(try await Self.search(api, club, as: coach, "Spiel").map(\.id) == [match.id])
            #expect(try await Self.search(api, club, as: coach, "elternabend -fussball").map(\.id) == [other.id])
            // A stemmed word in a comment finds its post.
            _ = try await api.call(
                .post, "/api/v1/communities/\(club.id)/posts/\(other.id)/comments", as: coach,
                json: #"{"content":"Bitte Getränke mitbringen"}"#)
            #expect(try await Self.search(api, club, as: coach, "getranke").map(\.id) == [other.id])
        }
    }

    /// A new search language applies to what was written before it, polls' options included.
    @Test func aNewLanguageAppliesToWhatTheCommunityAlreadyWrote() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Trainer")
            let club = try await api.community(by: coach)
            let post = try await FeedTests.post(api, in: club, by: coach, #"{"content":"Wir spielen am Samstag"}"#)
            let poll = try await FeedTests.post(
                api, in: club, by: coach,
                #"{"type":"poll","pollData":{"question":"Wann?","options":["Vormittags","Nachmittags"]}}"#)
            #expect(try await Self.search(api, club, as: coach, "Spiel").isEmpty)
            let changed = try await api.call(
                .patch, "/api/v1/communities/\(club.id)", as: coach, json: #"{"settings":{"searchLanguage":"german"}}"#)
            #expect(changed.status == .ok)
            #expect(try await Self.search(api, club, as: coach, "Spiel").map(\.id) == [post.id])
            #expect(try await Self.search(api, club, as: coach, "nachmittags").map(\.id) == [poll.id])
            let refused = try await api.call(
                .patch, "/api/v1/communities/\(club.id)", as: coach, json: #"{"settings":{"searchLanguage":"klingon"}}"#
            )
            #expect(refused.fieldErrors["settings.searchLanguage"] != nil)
        }
    }

    @Test func frenchPostsAreFoundWithoutAccentsAndQuotedPhrasesHold() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Entraîneur")
            let club = try await api.community(by: coach, settings: #"{"searchLanguage":"french"}"#)
            let goûter = try await FeedTests.post(
                api, in: club, by: coach, #"{"content":"Le goûter après le match sera à l'école"}"#)
            let match = try await FeedTests.post(
                api, in: club, by: coach, #"{"content":"Match annulé à cause de la pluie"}"#)
            #expect(try await Self.search(api, club, as: coach, "gouter ecole").map(\.id) == [goûter.id])
            #expect(Set(try await Self.search(api, club, as: coach, "match").map(\.id)) == [goûter.id, match.id])
            #expect(try await Self.search(api, club, as: coach, "\"match annulé\"").map(\.id) == [match.id])
            #expect(try await Self.search(api, club, as: coach, "matchs annulés").map(\.id) == [match.id])
        }
    }

    @Test func japaneseTextIsFoundWithoutSpacesBetweenWords() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("コーチ")
            let club = try await api.community(by: coach)
            let practice = try await FeedTests.post(
                api, in: club, by: coach, #"{"content":"明日の練習は中止です。雨のため。"}"#)
            let game = try await FeedTests.post(api, in: club, by: coach, #"{"content":"土曜日の試合は十時開始"}"#)
            #expect(try await Self.search(api, club, as: coach, "練習").map(\.id) == [practice.id])
            #expect(try await Self.search(api, club, as: coach, "試合 開始").map(\.id) == [game.id])
            #expect(try await Self.search(api, club, as: coach, "練習中止").isEmpty)
            #expect(try await Self.search(api, club, as: coach, "練習は中止").map(\.id) == [practice.id])
            // One character finds the texts that hold it.
            #expect(try await Self.search(api, club, as: coach, "雨").map(\.id) == [practice.id])
            #expect(Set(try await Self.search(api, club, as: coach, "日").map(\.id)) == [practice.id, game.id])
        }
    }

    /// Whatever a person types is a search, never an error; results stay in the community and
    /// page without repeats.
    @Test func anythingTypedIsASearchAndResultsPageWithinTheCommunity() async throws {
        try await CoreHarness.run { api in
            let (coach, eve) = (try await api.signIn("Coach"), try await api.signIn("Eve"))
            let club = try await api.community(by: coach)
            let lions = try await api.community(by: eve)
            var ours: [UUID] = []
            for index in 0..<5 {
                ours.append(try await FeedTests.post(api, in: club, by: coach, #"{"content":"kit day \#(index)"}"#).id)
            }
            _ = try await FeedTests.post(api, in: lions, by: eve, #"{"content":"kit day elsewhere"}"#)
            for typed in ["\"unclosed", "-", "a & | ! (", "'; DROP TABLE posts; --", "kit:*", "!!!"] {
                _ = try await Self.search(api, club, as: coach, typed)
            }
            var seen: [UUID] = []
            var path = "/api/v1/communities/\(club.id)/posts?q=kit&limit=2"
            while true {
                let page = try await api.call(.get, path, as: coach).page(Post.self)
                seen += page.items.map(\.id)
                guard let next = page.next else { break }
                path = "/api/v1/communities/\(club.id)/posts?q=kit&limit=2&cursor=\(next)"
            }
            #expect(seen.count == 5 && Set(seen) == Set(ours))
            for blank in ["%20", "%20%20%20", "%09%0A", "%E2%80%83"] {
                let empty = try await api.call(.get, "/api/v1/communities/\(club.id)/posts?q=\(blank)", as: coach)
                #expect(empty.status == .badRequest && empty.fieldErrors["q"] != nil, "\(blank): \(empty.status)")
            }
            // A `+` is a plus (RFC 3986's query, which URLComponents writes), not a form's space:
            // "C++" is searched as typed.
            let pluses = try await api.call(.get, "/api/v1/communities/\(club.id)/posts?q=+++", as: coach)
            #expect(pluses.status == .ok)
            // A cursor of one search does not page another.
            let first = try await api.call(.get, "/api/v1/communities/\(club.id)/posts?q=kit&limit=2", as: coach)
            let cursor = try #require(try first.page(Post.self).next)
            let other = try await api.call(
                .get, "/api/v1/communities/\(club.id)/posts?q=day&limit=2&cursor=\(cursor)", as: coach)
            #expect(other.fieldErrors["cursor"] != nil)
        }
    }
}
