import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

struct NotificationRoutes {
    let store: NotificationStore

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/me/notifications") { request, context in
            let userId = try context.requireUser()
            let query = request.uri.queryParameters
            let limit = try PageCursor.limit(from: query.get("limit"))
            let cursor = try query.get("cursor").map(PageCursor.init(token:))
            let unreadOnly = query.get("unreadOnly") == "true"
            let page = try await store.page(for: userId, after: cursor, limit: limit + 1, unreadOnly: unreadOnly)
            let items = Array(page.prefix(limit))
            let next =
                page.count > limit ? items.last.map { PageCursor(createdAt: $0.createdAt, id: $0.id).token } : nil
            return try Response.json(
                ListEnvelope(
                    data: items, meta: ResponseMeta(requestId: context.requestId),
                    pagination: CursorPagination(nextCursor: next, hasMore: next != nil, limit: limit)))
        }
    }
}
