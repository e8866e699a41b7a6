import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct MemberRoutes {
    let store: MemberStore
    let access: CommunityAccess

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/communities/:communityId/members") { request, context in
            let userId = try context.requireUser()
            let page = try PageRequest(request)
            // The first page is what every client opens with: it is cached with the community.
            let first = page.cursor == nil ? page.fetchLimit : nil
            let granted = try await access.require(
                .viewContent, in: context.communityId(), by: userId, membersPageLimit: first)
            if let cached = granted.cachedMembers {
                let rows = try cached.map { ($0.member, try PageCursor(token: $0.cursor)) }
                return try Response.page(rows, of: page, requestId: context.requestId)
            }
            let rows = try await store.members(
                of: granted.record.id, viewer: userId, after: page.cursor, limit: page.fetchLimit)
            if let first {
                await access.cache.storeMembersPage(
                    rows.map { .init(member: $0.0, cursor: $0.1.token) }, granted.record.id, limit: first,
                    generation: granted.generation)
            }
            return try Response.page(rows, of: page, requestId: context.requestId)
        }

        router.patch("/api/v1/communities/:communityId/members/:userId") { request, context in
            let actor = try context.requireUser()
            let granted = try await access.require(.changeMemberRoles, in: context.communityId(), by: actor)
            let target = try context.memberId()
            var reader = try await FieldReader.read(request, context: context, allowed: ["role"])
            let role = reader.role("role")
            try reader.check()
            let member = try await store.changeRole(
                of: target, to: role ?? .member, in: granted, by: actor, request: RequestFacts(request, context))
            await access.cache.invalidate(granted.record.id)
            return try Response.data(member, requestId: context.requestId)
        }

        router.delete("/api/v1/communities/:communityId/members/:userId") { request, context in
            let actor = try context.requireUser()
            let granted = try await access.require(.removeMembers, in: context.communityId(), by: actor)
            let target = try context.memberId()
            try await store.remove(target, from: granted, by: actor, request: RequestFacts(request, context))
            await access.cache.invalidate(granted.record.id)
            return Response(status: .noContent)
        }

        router.post("/api/v1/communities/:communityId/members/:userId/readmit") { request, context in
            let actor = try context.requireUser()
            let granted = try await access.require(.removeMembers, in: context.communityId(), by: actor)
            try await store.readmit(
                try context.memberId(), in: granted, by: actor, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        router.post("/api/v1/communities/:communityId/leave") { request, context in
            let userId = try context.requireUser()
            let granted = try await access.require(.viewContent, in: context.communityId(), by: userId)
            try await store.leave(granted, user: userId, request: RequestFacts(request, context))
            await access.cache.invalidate(granted.record.id)
            return Response(status: .noContent)
        }
    }
}

extension AppRequestContext {
    func memberId() throws -> UUID {
        guard let id = parameters.get("userId", as: UUID.self) else { throw MemberStore.memberNotFound }
        return id
    }
}
