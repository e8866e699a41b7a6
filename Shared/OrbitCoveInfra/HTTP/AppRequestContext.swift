import Foundation
import Hummingbird
import Logging

/// The request context of every service: the request id, and the user once authenticated.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package var requestId: String = ""
    package var userId: UUID?
    /// W3C trace context of this request, carried into the messages it causes.
    package var traceparent: String = ""
    /// The peer's address; behind the gateway that is the gateway, see ``clientAddress``.
    package let peerAddress: String?
    /// The client's IP address, as ``RequestIdMiddleware`` settled it: the gateway's
    /// `X-Real-IP` when the peer is a trusted proxy, otherwise the peer itself. For rate limits
    /// and the audit log; never written to logs.
    package var clientAddress: String = "unknown"
    /// What ``CommunityGateMiddleware`` resolved, handed to the ``CommunityRequestContext``
    /// that routes under `/api/v1/communities/:communityId` receive (never read here).
    var gatedCommunity: CommunityGate.Granted?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.peerAddress = source.channel.remoteAddress?.ipAddress
    }

    func resolveClientAddress(of request: Request, trustedProxies: TrustedProxies) -> String {
        Self.clientAddress(peer: peerAddress, forwarded: request.headers[.realIP], trustedProxies: trustedProxies)
    }

    /// Believes `X-Real-IP` (which the gateway always overwrites) only from a trusted proxy;
    /// anyone else could claim any address and spend someone else's rate limit. A request with
    /// no peer at all never crossed a network (in-process router tests).
    package static func clientAddress(peer: String?, forwarded: String?, trustedProxies: TrustedProxies) -> String {
        let forwarded = forwarded.flatMap { $0.isEmpty ? nil : $0 }
        guard let peer else { return forwarded ?? "unknown" }
        guard trustedProxies.contains(peer), let forwarded else { return peer }
        return forwarded
    }

    /// The authenticated user, or `401 UNAUTHENTICATED` for a route that needs one.
    package func requireUser() throws -> UUID {
        guard let userId else { throw APIError.unauthenticated(message: "Sign in to continue") }
        return userId
    }
}

extension APIError {
    package static func unauthenticated(message: String) -> APIError {
        unauthenticated("UNAUTHENTICATED", message)
    }
}
