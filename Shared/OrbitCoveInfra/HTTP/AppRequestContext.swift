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
    /// The peer's address; behind the gateway that is the gateway, see ``clientAddress(of:)``.
    package let peerAddress: String?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.peerAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The client's IP address: the gateway's `X-Real-IP` (which it always overwrites) when
    /// the request came through it, otherwise the peer's. Services listen on loopback or a
    /// private network only, so the header cannot come from a client directly.
    package func clientAddress(of request: Request) -> String {
        request.headers[.realIP] ?? peerAddress ?? "unknown"
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
