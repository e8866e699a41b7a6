import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct InviteRoutes {
    let store: InviteStore
    let gate: CommunityGate
    let limiter: RateLimiter
    let lookupLimit: RateLimit

    func register(on router: Router<AppRequestContext>, community: RouterGroup<CommunityRequestContext>) {
        community.post("invites") { request, context in
            let granted = try context.member(.inviteMembers)
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["maxUses", "expiresInHours"], nullClears: false)
            let maxUses = reader.integer("maxUses", in: 1...10_000).value
            let expiresInHours = reader.integer("expiresInHours", in: 1...(24 * 90)).value
            try reader.check()
            let invite = try await store.create(
                in: granted, maxUses: maxUses, expiresInHours: expiresInHours, request: RequestFacts(request, context))
            return try Response.data(invite, status: .created, requestId: context.requestId)
        }

        community.get("invites") { request, context in
            let granted = try context.member(.inviteMembers)
            let page = try PageRequest(request)
            let rows = try await store.invites(of: granted.communityId, viewer: granted.userId, page: page)
            return try Response.page(rows, of: page, requestId: context.requestId)
        }

        community.delete("invites/:inviteId") { request, context in
            let granted = try context.member(.inviteMembers)
            guard let inviteId = context.parameters.get("inviteId", as: UUID.self) else { throw InviteStore.notFound }
            try await store.revoke(inviteId, in: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        router.get("/api/v1/invites/:code") { request, context in
            try await limitLookups(request, context)
            let preview = try await store.preview(context.parameters.get("code") ?? "", for: try context.requireUser())
            return try Response.data(preview, requestId: context.requestId)
        }

        router.post("/api/v1/invites/:code/join") { request, context in
            try await join(code: context.parameters.get("code") ?? "", community: nil, request, context)
        }

        router.post("/api/v1/communities/:communityId/join") { request, context in
            let communityId = try context.communityId()
            var reader = try await FieldReader.read(request, context: context, allowed: ["code"], nullClears: false)
            let code = reader.text("code", maxLength: 20, required: true).value
            try reader.check()
            return try await join(code: code ?? "", community: communityId, request, context)
        }
    }

    private func join(
        code: String, community: UUID?, _ request: Request, _ context: AppRequestContext
    ) async throws
        -> Response
    {
        let userId = try context.requireUser()
        try await limitLookups(request, context)
        let joined = try await store.redeem(
            code, expectedCommunity: community, by: userId, request: RequestFacts(request, context))
        let granted = try await gate.require(.viewContent, in: joined.communityId, by: userId)
        return try Response.data(granted.community, status: joined.isNew ? .created : .ok, requestId: context.requestId)
    }

    /// Guessing codes costs a budget per account and per client address.
    private func limitLookups(_ request: Request, _ context: AppRequestContext) async throws {
        let userId = try context.requireUser()
        try await limiter.enforce(lookupLimit, client: "user:\(userId.uuidString)")
        try await limiter.enforce(lookupLimit, client: "ip:\(context.clientAddress)")
    }
}
