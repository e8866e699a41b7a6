import HTTPTypes
import Hummingbird
import NIOCore

/// Answers `405 METHOD_NOT_ALLOWED`, with `Allow` naming the path's methods, for a path the
/// service has with other methods; a path it does not have at all stays `404 NOT_FOUND`.
///
/// Added to the router after every route (``ServiceRuntime/makeApplication(_:)`` does it), so
/// it wraps only the router's not-found responder: a request reaches it only when no route
/// matched both its path and its method. Which path a request names is asked of a second
/// router holding the same paths, so a path resolves exactly as the service's router resolves
/// it (constant segments before captures: `events/ics` is its own path, not an `:eventId`).
package struct MethodNotAllowedMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext
    /// Each of the service's paths, answering `GET` with its methods in `Allow`.
    let paths: RouterResponder<AppRequestContext>

    package init(routes: [Router<AppRequestContext>.RouteDescription]) {
        let paths = Router(context: AppRequestContext.self)
        for methods in Dictionary(grouping: routes, by: \.path.description).values {
            guard let path = methods.first?.path else { continue }
            var names = Set(methods.map(\.method.rawValue))
            // A path that takes GET takes HEAD too (HeadResponder answers it as the GET).
            if names.contains("GET") { names.insert("HEAD") }
            let allow = names.sorted().joined(separator: ", ")
            paths.get(path) { _, _ in Response(status: .methodNotAllowed, headers: [.allow: allow]) }
        }
        self.paths = paths.buildResponder()
    }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let probe = Request(
            head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: request.uri.path),
            body: .init(buffer: ByteBuffer()))
        let known = try await paths.respond(to: probe, context: context)
        guard known.status == .methodNotAllowed, let allow = known.headers[.allow] else {
            return try await next(request, context)
        }
        throw APIError(
            .methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "This path does not take this method",
            headers: [.allow: allow])
    }
}

extension Router<AppRequestContext> {
    /// `405` with `Allow` for a known path asked with another method, from the routes added so
    /// far: call once, after the last route.
    package func answerUndeclaredMethods() {
        add(middleware: MethodNotAllowedMiddleware(routes: routes))
    }
}
