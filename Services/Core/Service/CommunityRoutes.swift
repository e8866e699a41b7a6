import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct CommunityRoutes {
    let store: CommunityStore

    struct CreateRequest: Decodable {
        var name: String
        var description: String?
        var iconUrl: String?
        var settings: CommunitySettings?
    }

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/communities") { request, context in
            let userId = try context.requireUser()
            let body = try await request.decodeJSON(as: CreateRequest.self, context: context)
            let community = try await store.create(
                try Self.validate(body), by: userId, traceparent: context.traceparent)
            return try Response.data(
                community, status: .created, requestId: context.requestId,
                headers: [.location: "/api/v1/communities/\(community.id.uuidString)"])
        }

        router.get("/api/v1/communities/:communityId") { _, context in
            let userId = try context.requireUser()
            // A non-member learns nothing, not even that the community exists.
            guard let id = context.parameters.get("communityId", as: UUID.self),
                let community = try await store.community(id, for: userId)
            else { throw APIError.notFound("COMMUNITY_NOT_FOUND", "No such community") }
            return try Response.data(community, requestId: context.requestId)
        }
    }

    static func validate(_ body: CreateRequest) throws -> CommunityStore.NewCommunity {
        var problems: [String: String] = [:]
        let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
        if name.isEmpty || name.count > 100 { problems["name"] = "must be 1 to 100 characters" }
        let description = body.description?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let description, description.count > 2000 { problems["description"] = "must be at most 2000 characters" }
        if let icon = body.iconUrl {
            let url = URL(string: icon)
            if icon.count > 500 || url?.host == nil || !["http", "https"].contains(url?.scheme ?? "") {
                problems["iconUrl"] = "must be an http(s) URL of at most 500 characters"
            }
        }
        let settings = body.settings ?? .default
        problems.merge(validate(settings)) { first, _ in first }
        guard problems.isEmpty else { throw APIError.validation(problems) }
        return .init(
            name: name, description: description?.isEmpty == true ? nil : description, iconUrl: body.iconUrl,
            settings: settings)
    }

    static func validate(_ settings: CommunitySettings) -> [String: String] {
        var problems: [String: String] = [:]
        if !(0...720).contains(settings.defaultReminderHours) {
            problems["settings.defaultReminderHours"] = "must be between 0 and 720"
        }
        if TimeZone(identifier: settings.timezone) == nil {
            problems["settings.timezone"] = "must be an IANA time zone such as Europe/Berlin"
        }
        return problems
    }
}
