import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct NotificationRoutes {
    let store: NotificationStore

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/me/notifications") { request, context in
            let userId = try context.requireUser()
            let page = try PageRequest(request)
            let unreadOnly: Bool
            switch request.uri.queryParameters.get("unreadOnly") {
            case nil, "false": unreadOnly = false
            case "true": unreadOnly = true
            default: throw APIError.validation(["unreadOnly": "must be true or false"])
            }
            let rows = try await store.page(
                for: userId, after: page.cursor, limit: page.fetchLimit, unreadOnly: unreadOnly)
            return try Response.page(
                rows.map { ($0, PageCursor(createdAt: $0.createdAt, id: $0.id)) }, of: page,
                requestId: context.requestId)
        }
    }
}
