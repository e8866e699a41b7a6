import Hummingbird

/// Reads `Authorization: Bearer <access token>`; a valid token puts its user id in the
/// context, a bad one is refused at once. No header leaves the request anonymous, for the
/// route to accept or refuse (`context.requireUser()`). Tokens are never logged.
package struct AuthenticationMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext
    let verifier: AccessTokenVerifier

    package init(verifier: AccessTokenVerifier) { self.verifier = verifier }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let authorization = request.headers[.authorization] else { return try await next(request, context) }
        var context = context
        do {
            context.userId = try await verifier.verifiedBearer(authorization).userId
        } catch {
            context.logger.info("access token refused", metadata: ["reason": .string(error.code)])
            throw error
        }
        return try await next(request, context)
    }
}
