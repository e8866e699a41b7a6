import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// `GET /communities/{id}/audit`: what admins and members did in a community, newest first,
/// for its admins (the audit log's row-level security agrees).
struct AuditRoutes {
    let store: AuditStore

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("audit") { request, context in
            let granted = try context.member(.viewAuditLog)
            let page = try PageRequest(request)
            let rows = try await store.entries(of: granted.communityId, viewer: granted.userId, page: page)
            return try Response.page(rows, of: page, requestId: context.requestId)
        }
    }
}
