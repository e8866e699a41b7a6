import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The first members page is kept in Redis as the JSON it was answered with: a second read
/// answers from it, the same page with a cursor that walks on, and whatever else the key holds
/// is read past, to the database.
@Suite struct CachedMembersPageTests {
    @Test func theCachedFirstPageIsThePageTheDatabaseGave() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let ben = try await api.signIn("Ben")
            let cleo = try await api.signIn("Cleo")
            let club = try await api.club(of: ada, with: [ben, cleo])
            let path = "/api/v1/communities/\(club.id)/members?limit=2"
            let redis = try RedisClient(
                url: TestEnvironment.redisURL, connections: 1, timeout: TestEnvironment.redisTimeout,
                logger: TestEnvironment.logger)
            try await withServices([redis]) {
                let first = try await api.call(.get, path, as: ada)
                #expect(first.status == .ok)
                let generation = try await redis.get(CommunityCache.generationKey(club.id)) ?? "0"
                let key = CommunityCache.membersPageKey(club.id, generation: generation, limit: 3)
                #expect(key.contains(":members-page:\(CommunityCache.membersPageFormat):"))
                #expect(CommunityCache.membersPageFormat.count == 12)
                let stored = try #require(try await redis.get(key), "the first page was not cached")
                let cached = try #require(EncodedPage(stored: stored))
                #expect(cached.pagination.limit == 2 && cached.pagination.hasMore)

                let second = try await api.call(.get, path, as: ada)
                #expect(try Self.withoutMeta(second) == Self.withoutMeta(first))
                let (items, next) = try second.page(CommunityMember.self)
                #expect(items.count == 2)
                let rest = try await api.call(
                    .get, "/api/v1/communities/\(club.id)/members?limit=2&cursor=\(try #require(next))", as: ada
                ).page(CommunityMember.self)
                #expect(
                    Set(items.map(\.userId) + rest.items.map(\.userId)) == [ada.id, ben.id, cleo.id]
                        && rest.next == nil)

                // What the key holds is what goes out ...
                try await redis.set(key, "2 \n[]", expiresIn: 60)
                #expect(try await api.call(.get, path, as: ada).page(CommunityMember.self).items.isEmpty)
                // ... unless it is not a page, or a page of another size, and then the database
                // answers (and the page is stored again).
                for other in [#"[{"member":{},"cursor":"x"}]"#, "3 \n[]"] {
                    try await redis.set(key, other, expiresIn: 60)
                    #expect(try Self.withoutMeta(try await api.call(.get, path, as: ada)) == Self.withoutMeta(first))
                    #expect(try await redis.get(key) == stored)
                }
            }
        }
    }

    /// The body without `meta` (its time and request id differ between any two responses).
    static func withoutMeta(_ reply: CoreHarness.Reply) throws -> JSONValue {
        guard case .object(var object) = try JSONCoding.decoder.decode(JSONValue.self, from: reply.body) else {
            throw TestFailure("not an object: \(String(decoding: reply.body, as: UTF8.self))")
        }
        #expect(object["meta"] != nil && object["data"] != nil && object["pagination"] != nil)
        object["meta"] = nil
        return .object(object)
    }
}
