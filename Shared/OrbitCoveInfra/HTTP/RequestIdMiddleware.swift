import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
import OrbitCoveModels
import PostgresNIO

// swift-format-ignore: NeverForceUnwrap
// The names are valid header tokens, so the failable initialiser cannot fail.
extension HTTPField.Name {
    package static let requestId = Self("X-Request-Id")!
    package static let servedBy = Self("X-OrbitCove-Service")!
    package static let idempotencyKey = Self("Idempotency-Key")!
    package static let realIP = Self("X-Real-IP")!
    package static let traceparent = Self("traceparent")!
}

/// Takes the gateway's `X-Request-Id` (or makes one), puts it on every log record of the
/// request and on the response, settles the client's address, names the answering service,
/// and logs one line per request. The line names the route as registered
/// (`/api/v1/invites/:code`), not the path: paths carry bearer secrets (invite codes, feed
/// tokens), and logs hold no personal data beyond ids.
package struct RequestIdMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext
    let service: String
    let trustedProxies: TrustedProxies

    package init(service: String, trustedProxies: TrustedProxies) {
        self.service = service
        self.trustedProxies = trustedProxies
    }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        let incoming = request.headers[.requestId].flatMap { Self.isAcceptable($0) ? $0 : nil }
        context.requestId = incoming ?? UUID.random().lowercasedString
        context.clientAddress = context.resolveClientAddress(of: request, trustedProxies: trustedProxies)
        context.traceparent = TraceContext.child(of: request.headers[.traceparent], requestId: context.requestId)
        context.logger[metadataKey: "requestId"] = .string(context.requestId)
        context.logger[metadataKey: "traceparent"] = .string(context.traceparent)
        let started = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = try ErrorRendering.response(for: error, request: request, context: context)
        }
        response.headers[.requestId] = context.requestId
        response.headers[.servedBy] = service
        let elapsed = ContinuousClock.now - started
        context.logger.info(
            "request",
            metadata: [
                "method": .string(request.method.rawValue),
                "route": .string(context.endpointPath ?? "(no route)"),
                "status": .stringConvertible(response.status.code),
                "durationMs": .stringConvertible(Self.milliseconds(elapsed)),
                "userId": .string(context.userId?.lowercasedString ?? "-"),
            ])
        return response
    }

    /// A client-supplied id is echoed into logs, so it must be short and plain.
    static func isAcceptable(_ id: String) -> Bool {
        id.count <= 128 && id.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return (Double(seconds) * 1000 + Double(attoseconds) / 1e15).rounded() / 1
    }
}

/// Turns any error into the seed's error envelope. Unexpected errors are logged with their
/// detail and answered with a generic 500: their text never reaches the client.
package enum ErrorRendering {
    package static func response(
        for error: any Error, request: Request, context: AppRequestContext
    ) throws
        -> Response
    {
        switch error {
        case let error as APIError:
            return try error.response(from: request, context: context)
        case is HTTPParserError:
            // The body broke off in bytes that are not HTTP (a bad chunk): the client's error.
            return try MalformedRequestAnswer.refusal.response(from: request, context: context)
        case let error as HTTPError:
            let apiError = APIError(
                error.status, code: APIError.code(for: error.status),
                message: error.body ?? error.status.reasonPhrase, headers: error.headers)
            return try apiError.response(from: request, context: context)
        case let error as PSQLError where error.serverInfo?[.sqlState] == Database.accountDeleted:
            // The token outlived its account, or names none (`app_enter_as_user`,
            // `app_community_standing`; migrations 0076, 0081).
            return try APIError.accountDeleted.response(from: request, context: context)
        case let error as PSQLError where Database.isPassing(error):
            // A statement past its transaction's bound (a lock held that long), a deadlock
            // broken, a transaction that could not be serialised with another, a lock not had
            // in time: the database is busy, not broken, and the same request would pass if
            // tried again. (Left a PSQLError until here: work that is not a request tells such a
            // failure by its code.)
            context.logger.warning(
                "database busy; the client may try again", metadata: ["error": .string(logDescription(of: error))])
            return try Database.unavailable.response(from: request, context: context)
        default:
            context.logger.error("unhandled error", metadata: ["error": .string(logDescription(of: error))])
            return try APIError.internalError.response(from: request, context: context)
        }
    }
}
