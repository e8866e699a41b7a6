import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct UserRoutes {
    let store: UserStore
    /// Where the gateway serves the API: an uploaded avatar's address starts with it.
    let publicURL: String

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/me") { _, context in
            let userId = try context.requireUser()
            guard let user = try await store.user(id: userId) else { throw UserStore.gone }
            return try Response.data(user, requestId: context.requestId)
        }

        router.patch("/api/v1/me") { request, context in
            let userId = try context.requireUser()
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["displayName", "avatarUrl", "avatarMediaId"])
            let displayName = reader.line("displayName", maxLength: 100, required: reader.fields["displayName"] != nil)
            let avatar = reader.picture(url: "avatarUrl", media: "avatarMediaId", publicURL: publicURL)
            try reader.check()
            let user = try await store.update(
                userId, displayName: displayName.value, avatar: avatar, request: RequestFacts(request, context))
            return try Response.data(user, requestId: context.requestId)
        }

        // 202: the account goes when the grace period ends, unless cancelled before.
        router.delete("/api/v1/me") { request, context in
            let user = try await store.requestDeletion(context.requireUser(), request: RequestFacts(request, context))
            return try Response.data(user, status: .accepted, requestId: context.requestId)
        }

        router.post("/api/v1/me/cancel-deletion") { request, context in
            let user = try await store.cancelDeletion(context.requireUser(), request: RequestFacts(request, context))
            return try Response.data(user, requestId: context.requestId)
        }
    }
}
