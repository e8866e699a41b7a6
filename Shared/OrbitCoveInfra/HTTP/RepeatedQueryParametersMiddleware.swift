import Foundation
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
        // Names as the client meant them: `fr%6Fm` is `from` given again.
        var seen: Set<String> = []
        var problems: [String: String] = [:]
        for (name, _) in request.uri.queryParameters {
            let meant = String(name).removingPercentEncoding ?? String(name)
            if !seen.insert(meant).inserted { problems[meant] = "must be given once" }
        }
        guard problems.isEmpty else { throw APIError.validation(problems) }
        return try await next(request, context)
    }
}
