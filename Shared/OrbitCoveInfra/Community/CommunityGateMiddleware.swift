import Foundation
import Hummingbird
import OrbitCoveModels

/// Resolves the caller's membership once for every route under
/// `/api/v1/communities/:communityId` (a route group with this middleware): a non-member's
/// request ends here with `404 COMMUNITY_NOT_FOUND`, a member's goes on with the standing
/// that its handler receives in ``CommunityRequestContext/community``.
package struct CommunityGateMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext
    let gate: CommunityGate
    /// The size of the first members page a request wants read from the cache in the same
    /// round trip as the membership (the members list, which every client opens with).
    let membersPage: @Sendable (Request, AppRequestContext) -> Int?

    package init(
        gate: CommunityGate, membersPage: @escaping @Sendable (Request, AppRequestContext) -> Int? = { _, _ in nil }
    ) {
        self.gate = gate
        self.membersPage = membersPage
    }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let userId = try context.requireUser()
        guard let communityId = context.parameters.get("communityId", as: UUID.self) else {
            throw CommunityGate.notFound
        }
        var context = context
        context.gatedCommunity = try await gate.resolve(
            communityId, by: userId, membersPageLimit: membersPage(request, context))
        return try await next(request, context)
    }
}
