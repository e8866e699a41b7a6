import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `GET /communities/{id}/sync[?since=TOKEN | ?page=PAGE]`: see ``SyncEngine``.
struct SyncRoutes {
    let engine: SyncEngine

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("sync") { request, context in
            let granted = try context.member(.viewContent)
            let query = request.uri.queryParameters
            let since = query.get("since")
            let page = query.get("page")
            let syncRequest: SyncEngine.Request
            switch (since, page) {
            case (nil, nil): syncRequest = .full
            case (let since?, nil): syncRequest = .since(try SyncToken(text: since, field: "since"))
            case (nil, let page?): syncRequest = .page(try SyncPageToken(text: page))
            case (.some, .some): throw APIError.validation(["page": "cannot be combined with since"])
            }
            let sync = try await engine.sync(granted.communityId, for: granted, syncRequest)
            return try Response.data(sync, requestId: context.requestId)
        }
    }
}
