import Foundation
import Hummingbird
import OrbitCoveModels

/// The request context of every route under `/api/v1/communities/:communityId`: the caller's
/// standing in the path's community is always there, resolved once by
/// ``CommunityGateMiddleware`` before the handler runs (a non-member never gets this far), so
/// a handler cannot forget to ask and cannot be registered where nobody asked. A handler
/// still names what it is about to do: `let granted = try context.member(.createEvent)`.
///
/// A Hummingbird child context: the group ``ServiceKit/communityRoutes(on:membersPage:)``
/// makes runs the gate on the service's ``AppRequestContext``, then makes this from it.
package struct CommunityRequestContext: ChildRequestContext {
    package typealias ParentContext = AppRequestContext

    package var coreContext: CoreRequestContextStorage
    package let requestId: String
    package let traceparent: String
    /// See ``AppRequestContext/clientAddress``.
    package let clientAddress: String
    /// The caller's standing in the path's community.
    package let community: CommunityGate.Granted

    package var userId: UUID { community.userId }

    package init(context: AppRequestContext) throws {
        // The group's middleware has resolved it; only a route group built some other way
        // could get here without it, and that is a bug in the code, not the request.
        guard let community = context.gatedCommunity else { throw APIError.internalError }
        self.coreContext = context.coreContext
        self.requestId = context.requestId
        self.traceparent = context.traceparent
        self.clientAddress = context.clientAddress
        self.community = community
    }

    /// The caller's standing, if the permission matrix lets them do `action`: `403 FORBIDDEN`
    /// if not (`404 COMMUNITY_NOT_FOUND` in a deleted community, unless they may restore it).
    package func member(_ action: CommunityAction) throws -> CommunityGate.Granted {
        try community.require(action)
        return community
    }
}

extension RequestFacts {
    package init(_ request: Request, _ context: CommunityRequestContext) {
        self.init(
            clientAddress: context.clientAddress, traceparent: context.traceparent.isEmpty ? nil : context.traceparent)
    }
}
