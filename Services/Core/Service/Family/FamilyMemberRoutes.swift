import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct FamilyMemberRoutes {
    let store: FamilyMemberStore

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/me/family-members") { request, context in
            let userId = try context.requireUser()
            let page = try PageRequest(request)
            let rows = try await store.list(of: userId, page: page)
            return try Response.page(rows, of: page, requestId: context.requestId)
        }

        router.post("/api/v1/me/family-members") { request, context in
            let userId = try context.requireUser()
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["name", "avatarUrl"], nullClears: false)
            let name = reader.line("name", maxLength: 100, required: true)
            let avatarUrl = reader.url("avatarUrl")
            try reader.check()
            let member = try await store.create(for: userId, name: name.value ?? "", avatarUrl: avatarUrl.value)
            return try Response.data(member, status: .created, requestId: context.requestId)
        }

        router.patch("/api/v1/me/family-members/:familyMemberId") { request, context in
            let userId = try context.requireUser()
            let id = try context.familyMemberId()
            var reader = try await FieldReader.read(request, context: context, allowed: ["name", "avatarUrl"])
            let name = reader.line("name", maxLength: 100, required: reader.fields["name"] != nil)
            let avatarUrl = reader.url("avatarUrl")
            try reader.check()
            let member = try await store.update(id, of: userId, name: name.value, avatarUrl: avatarUrl)
            return try Response.data(member, requestId: context.requestId)
        }

        router.delete("/api/v1/me/family-members/:familyMemberId") { request, context in
            try await store.delete(
                context.familyMemberId(), of: context.requireUser(), request: RequestFacts(request, context))
            return Response(status: .noContent)
        }
    }
}

extension AppRequestContext {
    func familyMemberId() throws -> UUID {
        guard let id = parameters.get("familyMemberId", as: UUID.self) else { throw FamilyMemberStore.notFound }
        return id
    }
}
