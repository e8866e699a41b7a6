import HTTPTypes
import Hummingbird

/// Answers `HEAD` wherever `GET` is (RFC 9110 §9.3.2), around the whole router: the request is
/// routed as a `GET`, and its status and headers are sent without the body (calendar apps probe
/// feeds so, for one). A body of unknown length keeps its length unknown: Hummingbird's own
/// `HEAD` routes gave a streamed body (the ledger's CSV export) `Content-Length: 0`, which says
/// the `GET` would send nothing. Without a length, NIO frames the answer as the `GET`'s would be
/// framed (chunked) and writes no body. Metrics and logs count such a request as the `GET`.
package struct HeadResponder<Routed: HTTPResponder>: HTTPResponder {
    let routed: Routed

    package init(_ routed: Routed) { self.routed = routed }

    package func respond(to request: Request, context: Routed.Context) async throws -> Response {
        guard request.method == .head else { return try await routed.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        let response = try await routed.respond(to: Request(head: head, body: request.body), context: context)
        var answer = Response(status: response.status, headers: response.headers)
        if response.body.contentLength == nil { answer.headers[.contentLength] = nil }
        return answer
    }
}
