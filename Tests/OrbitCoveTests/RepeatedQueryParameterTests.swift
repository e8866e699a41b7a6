import Foundation
import OrbitCoveModels
import Testing

/// A query parameter given twice is ambiguous (`limit=5&limit=500`: which?), and no operation
/// takes a list in its query: every service refuses it, naming the parameter, rather than
/// reading the first.
@Suite struct RepeatedQueryParameterTests {
    @Test func aParameterGivenTwiceIsRefusedByName() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let window = "/api/v1/communities/\(club.id)/events?from=2031-05-01T00:00:00Z&to=2031-06-01T00:00:00Z"
            #expect(try await api.call(.get, window, as: coach).status == .ok)
            for path in [
                "\(window)&from=2031-05-02T00:00:00Z",
                "/api/v1/communities/\(club.id)/posts?limit=5&limit=500",
                "/api/v1/communities/\(club.id)/posts?limit=5&limit=abc",
                "/api/v1/communities/\(club.id)/members?limit=5&cursor=&limit=5",
                // The same name, percent-encoded (a hostile probe's way round the rule).
                "/api/v1/communities/\(club.id)/posts?limit=5&lim%69t=6",
            ] {
                let reply = try await api.call(.get, path, as: coach)
                #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(path)")
                let name = path.contains("from=2031-05-02") ? "from" : "limit"
                #expect(reply.fieldErrors[name] != nil, "\(path): \(reply.fieldErrors)")
            }
            // Distinct parameters, and one given once, are read as before.
            #expect(try await api.call(.get, "/api/v1/communities/\(club.id)/posts?limit=5", as: coach).status == .ok)
            // An empty name (`&&`) is no parameter.
            #expect(try await api.call(.get, "/api/v1/communities/\(club.id)/posts?limit=5&&", as: coach).status == .ok)
        }
    }
}
