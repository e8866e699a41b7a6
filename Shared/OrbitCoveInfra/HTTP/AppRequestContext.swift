import Foundation
import Hummingbird
import Logging

/// The request context of every service: the request id, and the user once authenticated.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package var requestId: String = ""
    package var userId: UUID?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
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
