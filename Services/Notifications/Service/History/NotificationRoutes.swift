import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/me/notifications`: the caller's history, its unread count, and marking read.
struct NotificationRoutes {
    let store: NotificationStore

    func register(on router: Router<AppRequestContext>) {
        let mine = router.group("/api/v1/me/notifications")
        mine.get { request, context in
            let userId = try context.requireUser()
            let page = try PageRequest(request)
            let query = request.uri.queryParameters
            let filter = NotificationStore.Filter(
                unreadOnly: try Self.flag(query.get("unreadOnly"), named: "unreadOnly"),
                communityId: try Self.community(query.get("communityId")))
            let rows = try await store.page(for: userId, filter, page: page)
            return try Response.page(
                rows.map { ($0, PageCursor(createdAt: $0.createdAt, id: $0.id)) }, of: page,
                requestId: context.requestId)
        }
        mine.get("unread-count") { request, context in
            let userId = try context.requireUser()
            let community = try Self.community(request.uri.queryParameters.get("communityId"))
            let count = try await store.unreadCount(for: userId, in: community)
            return try Response.data(UnreadCount(count: count), requestId: context.requestId)
        }
        mine.post(":notificationId/read") { _, context in
            let userId = try context.requireUser()
            guard let id = context.parameters.get("notificationId", as: UUID.self) else {
                throw NotificationStore.notFound
            }
            return try Response.data(try await store.markRead(id, for: userId), requestId: context.requestId)
        }
        mine.post("read-all") { request, context in
            let userId = try context.requireUser()
            let community = try Self.community(request.uri.queryParameters.get("communityId"))
            let marked = try await store.markAllRead(for: userId, in: community)
            return try Response.data(MarkedRead(marked: marked), requestId: context.requestId)
        }
    }

    static func flag(_ text: String?, named name: String) throws -> Bool {
        switch text {
        case nil, "false": false
        case "true": true
        default: throw APIError.validation([name: "must be true or false"])
        }
    }

    static func community(_ text: String?) throws -> UUID? {
        guard let text else { return nil }
        guard let id = UUID(uuidString: text) else { throw APIError.validation(["communityId": "must be a UUID"]) }
        return id
    }
}
