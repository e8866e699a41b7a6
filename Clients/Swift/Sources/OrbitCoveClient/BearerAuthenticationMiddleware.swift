import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Adds `Authorization: Bearer <access token>` to every request while a session is signed in,
/// and on a `401` refreshes the pair once through `POST /api/v1/auth/refresh` and sends the
/// request again with the new access token. A refused refresh ends the session (the `401`
/// goes back to the app, which signs in again).
public struct BearerAuthenticationMiddleware: ClientMiddleware {
    let session: Session
    let refresh: @Sendable (String) async throws -> Session.Tokens?

    /// - Parameter refreshClient: the client the refresh goes through; one without this
    ///   middleware, so a refused refresh is not itself refreshed.
    public init(session: Session, refreshClient: Client) {
        self.session = session
        self.refresh = { refreshToken in
            let response = try await refreshClient.refreshSession(body: .json(.init(refreshToken: refreshToken)))
            guard case .ok(let ok) = response else { return nil }
            let grant = try ok.body.json.value2.data
            return Session.Tokens(accessToken: grant.accessToken, refreshToken: grant.refreshToken)
        }
    }

    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let tokens = await session.tokens else { return try await next(request, body, baseURL) }
        let (response, responseBody) = try await next(Self.authorized(request, tokens.accessToken), body, baseURL)
        // A body that can be sent only once cannot be sent again: its 401 goes back as it is.
        guard response.status == .unauthorized, body?.iterationBehavior != .single else {
            return (response, responseBody)
        }
        guard let fresh = try await session.refreshed(after: tokens.accessToken, using: refresh) else {
            return (response, responseBody)
        }
        return try await next(Self.authorized(request, fresh.accessToken), body, baseURL)
    }

    static func authorized(_ request: HTTPRequest, _ accessToken: String) -> HTTPRequest {
        var request = request
        request.headerFields[.authorization] = "Bearer \(accessToken)"
        return request
    }
}
