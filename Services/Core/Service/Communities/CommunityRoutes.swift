import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct CommunityRoutes {
    let store: CommunityStore
    /// Where the gateway serves the API: an uploaded icon's address starts with it.
    let publicURL: String
    /// What `GET /communities/{id}` answers, written once per change of the record.
    let encoded = EncodedCommunities()

    func register(on router: Router<AppRequestContext>, community: RouterGroup<CommunityRequestContext>) {
        router.post("/api/v1/communities") { request, context in
            let userId = try context.requireUser()
            let new = try await Self.newCommunity(from: request, context: context, knowsZone: store.database.knowsZone)
            let community = try await store.create(new, by: userId, traceparent: context.traceparent)
            return try Response.data(
                community, status: .created, requestId: context.requestId,
                headers: [.location: "/api/v1/communities/\(community.id.lowercasedString)"])
        }

        community.get { _, context in
            let granted = try context.member(.viewContent)
            return try Response.data(
                json: try encoded.json(of: granted.record, role: granted.membership.role), requestId: context.requestId)
        }

        community.patch { request, context in
            let granted = try context.member(.editSettings)
            let changes = try await Self.changes(
                from: request, context: context, current: granted.record, publicURL: publicURL,
                knowsZone: store.database.knowsZone)
            let community = try await store.update(granted, with: changes, request: RequestFacts(request, context))
            return try Response.data(community, requestId: context.requestId)
        }

        community.delete { request, context in
            try await store.delete(try context.member(.deleteCommunity), request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.post("restore") { request, context in
            let community = try await store.restore(
                try context.member(.restoreCommunity), request: RequestFacts(request, context))
            return try Response.data(community, requestId: context.requestId)
        }

        router.get("/api/v1/me/communities") { request, context in
            let userId = try context.requireUser()
            let page = try PageRequest(request)
            let rows = try await store.communities(of: userId, page: page)
            return try Response.page(rows, of: page, requestId: context.requestId)
        }
    }

    /// A zone PostgreSQL does not know, as `settings.timezone`'s problem (community days are
    /// counted in SQL too).
    private static func checkZone(
        _ settings: [String: JSONValue]?, problems: inout [String: String], knowsZone: (String) async throws -> Bool
    ) async throws {
        guard problems["settings.timezone"] == nil, case .string(let zone)? = settings?["timezone"] else { return }
        if try await !knowsZone(zone) {
            problems["settings.timezone"] = "must be an IANA time zone such as Europe/Berlin"
        }
    }

    static func newCommunity(
        from request: Request, context: AppRequestContext, knowsZone: (String) async throws -> Bool
    ) async throws
        -> CommunityStore.NewCommunity
    {
        var reader = try await FieldReader.read(
            request, context: context, allowed: ["name", "description", "iconUrl", "settings"], nullClears: false)
        let name = reader.line("name", maxLength: 100, required: true)
        let description = reader.text("description", maxLength: 2000)
        let iconUrl = reader.url("iconUrl")
        let settings = CommunitySettings.merging(
            reader.object("settings") ?? [:], into: .default, problems: &reader.problems)
        try await checkZone(reader.object("settings"), problems: &reader.problems, knowsZone: knowsZone)
        try reader.check()
        return .init(name: name.value ?? "", description: description.value, iconUrl: iconUrl.value, settings: settings)
    }

    static func changes(
        from request: Request, context: CommunityRequestContext, current: CommunityRecord, publicURL: String,
        knowsZone: (String) async throws -> Bool
    ) async throws
        -> CommunityStore.Changes
    {
        var reader = try await FieldReader.read(
            request, context: context, allowed: ["name", "description", "iconUrl", "iconMediaId", "settings"])
        var changes = CommunityStore.Changes()
        changes.name = reader.line("name", maxLength: 100, required: reader.fields["name"] != nil).value
        changes.description = reader.text("description", maxLength: 2000)
        changes.icon = reader.picture(url: "iconUrl", media: "iconMediaId", publicURL: publicURL)
        if let patch = reader.object("settings") {
            let merged = CommunitySettings.merging(patch, into: current.settings, problems: &reader.problems)
            try await checkZone(patch, problems: &reader.problems, knowsZone: knowsZone)
            let encoded = try JSONCoding.decoder.decode(
                [String: JSONValue].self, from: try JSONCoding.encoder.encode(merged))
            changes.settingsPatch = encoded.filter { patch[$0.key] != nil }
            changes.fields += patch.keys.sorted().map { "settings.\($0)" }
        }
        try reader.check()
        if changes.name != nil { changes.fields.insert("name", at: 0) }
        if case .keep = changes.description {} else { changes.fields.append("description") }
        if !changes.icon.isKept { changes.fields.append("icon") }
        return changes
    }
}

extension AppRequestContext {
    /// The `:communityId` of the path; anything but a UUID names no community.
    func communityId() throws -> UUID {
        guard let id = parameters.get("communityId", as: UUID.self) else { throw CommunityGate.notFound }
        return id
    }
}
