import Hummingbird

/// Refuses a request that gives a query parameter more than once (`limit=5&limit=500`): no
/// operation takes a list in its query, and reading the first (as `queryParameters.get` does)
/// would quietly choose one of two answers the client gave. `400 VALIDATION_FAILED` names each
/// repeated parameter. A request without a query costs nothing here.
package struct RepeatedQueryParametersMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext

    package init() {}

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let query = request.uri.query, query.contains("&") else { return try await next(request, context) }
        var seen: Set<Substring> = []
        var problems: [String: String] = [:]
        for (name, _) in request.uri.queryParameters where !seen.insert(name).inserted {
            problems[String(name)] = "must be given once"
        }
        guard problems.isEmpty else { throw APIError.validation(problems) }
        return try await next(request, context)
    }
}
