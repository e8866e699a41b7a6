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
        let repeated = Self.repeated(in: request.uri.queryParameters.map(\.key))
        guard repeated.isEmpty else {
            throw APIError.validation(Dictionary(uniqueKeysWithValues: repeated.map { ($0, "must be given once") }))
        }
        return try await next(request, context)
    }

    /// The names given more than once among `names`, as the client meant them (`fr%6Fm` is
    /// `from`); an empty name (`a=1&&b=2`) is no parameter.
    package static func repeated<Name: StringProtocol>(in names: some Sequence<Name>) -> Set<String> {
        var seen: Set<String> = []
        var repeated: Set<String> = []
        for name in names where !name.isEmpty {
            let meant = String(name).removingPercentEncoding ?? String(name)
            if !seen.insert(meant).inserted { repeated.insert(meant) }
        }
        return repeated
    }
}
