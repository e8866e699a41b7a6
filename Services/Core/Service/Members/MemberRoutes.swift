import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct MemberRoutes {
    let store: MemberStore
    let cache: CommunityCache

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("members") { request, context in
            let granted = try context.member(.viewContent)
            let page = try PageRequest(request)
            // The first page is what every client opens with: it is cached with the community,
            // and the gate read it with the membership (``firstPageHint(_:_:)``).
            if page.cursor == nil, let cached = granted.cachedMembers, cached.pagination.limit == page.limit {
                return try Response.page(cached, requestId: context.requestId)
            }
            let rows = try await store.members(of: granted.communityId, viewer: granted.userId, page: page)
            let encoded = try EncodedPage(rows, of: page)
            if page.cursor == nil {
                await cache.storeMembersPage(
                    encoded, granted.communityId, limit: page.fetchLimit, generation: granted.generation)
            }
            return try Response.page(encoded, requestId: context.requestId)
        }

        community.patch("members/:userId") { request, context in
            let granted = try context.member(.changeMemberRoles)
            let target = try context.memberId()
            var reader = try await FieldReader.read(request, context: context, allowed: ["role"])
            let role = reader.role("role")
            try reader.check()
            let member = try await store.changeRole(
                of: target, to: role ?? .member, in: granted, request: RequestFacts(request, context))
            return try Response.data(member, requestId: context.requestId)
        }

        community.delete("members/:userId") { request, context in
            let granted = try context.member(.removeMembers)
            try await store.remove(try context.memberId(), from: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.post("members/:userId/readmit") { request, context in
            let granted = try context.member(.removeMembers)
            try await store.readmit(try context.memberId(), in: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.post("leave") { request, context in
            try await store.leave(try context.member(.viewContent), request: RequestFacts(request, context))
            return Response(status: .noContent)
        }
    }

    /// The size of the first members page the gate should read from the cache along with the
    /// membership: for `GET …/members` without a cursor, the page asked for (plus one).
    static func firstPageHint(_ request: Request, _ context: AppRequestContext) -> Int? {
        let query = request.uri.queryParameters
        guard request.method == .get, request.uri.path.hasSuffix("/members"), query.get("cursor") == nil,
            let limit = try? PageCursor.limit(from: query.get("limit"))
        else { return nil }
        return limit + 1
    }
}

extension CommunityRequestContext {
    func memberId() throws -> UUID {
        guard let id = parameters.get("userId", as: UUID.self) else { throw MemberStore.memberNotFound }
        return id
    }
}
