import Foundation
import HTTPTypes
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Every keyset-paged list, walked a row at a time, gives the rows of one large page in the
/// same order: nothing repeated, nothing skipped, whichever way the list runs.
@Suite struct KeysetPagingTests {
    @Test func walkingAListAPageAtATimeMatchesReadingItAtOnce() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let clubs = [
                try await api.community(by: ada), try await api.community(by: ada), try await api.community(by: ada),
            ]
            let club = clubs[0]
            for _ in 0..<3 {
                try await api.call(.post, "/api/v1/communities/\(club.id)/invites", as: ada, json: "{}")
            }
            for name in ["Cy", "Di", "Ed"] {
                try await api.call(.post, "/api/v1/me/family-members", as: ada, json: #"{"name":"\#(name)"}"#)
            }
            let lists: [(path: String, count: Int)] = [
                ("/api/v1/me/communities", 3), ("/api/v1/communities/\(club.id)/invites", 3),
                ("/api/v1/communities/\(club.id)/audit", 3), ("/api/v1/me/family-members", 3),
                ("/api/v1/communities/\(club.id)/members", 1),
            ]
            for (path, count) in lists {
                let whole = try await api.call(.get, "\(path)?limit=100", as: ada).page(Row.self)
                #expect(whole.items.count >= count && whole.next == nil, "\(path)")
                var walked: [Row] = []
                var cursor: String?
                repeat {
                    let page = try await api.call(
                        .get, "\(path)?limit=1" + (cursor.map { "&cursor=\($0)" } ?? ""), as: ada
                    ).page(Row.self)
                    walked += page.items
                    cursor = page.next
                } while cursor != nil && walked.count <= whole.items.count
                #expect(walked.map(\.key) == whole.items.map(\.key), "\(path)")
            }
            // The directions: my communities newest joined first, family members oldest first.
            let mine = try await api.call(.get, "/api/v1/me/communities?limit=100", as: ada).page(Row.self)
            #expect(mine.items.prefix(3).map(\.key) == clubs.reversed().map { $0.id.lowercasedString })
            let family = try await api.call(.get, "/api/v1/me/family-members?limit=100", as: ada).page(Row.self)
            #expect(family.items.compactMap(\.name) == ["Cy", "Di", "Ed"])
        }
    }

    /// Any list item: its id (a member's is its user id) and, for family members, the name.
    struct Row: Decodable {
        var id: UUID?
        var userId: UUID?
        var name: String?
        var key: String { (id ?? userId)?.lowercasedString ?? "" }
    }
}
