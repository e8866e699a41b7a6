import HTTPTypes
import Hummingbird
import NIOCore

/// Answers `HEAD` wherever `GET` is (RFC 9110 §9.3.2), around the whole router: the request is
/// routed as a `GET`, and its status and headers are sent without the body (calendar apps probe
/// feeds so, for one). A body of unknown length keeps its length unknown: Hummingbird's own
/// `HEAD` routes gave a streamed body (the ledger's CSV export) `Content-Length: 0`, which says
/// the `GET` would send nothing. Without a length, NIO frames the answer as the `GET`'s would be
/// framed (chunked) and writes no body.
///
/// The `GET`'s body still runs to its end, into nothing: what waits for a response to be
/// written (the request metrics, which count a request as active until then) sees it end. So a
/// `HEAD` costs what its `GET` does, and the metrics and logs count it as the `GET`.
package struct HeadResponder<Routed: HTTPResponder>: HTTPResponder {
    let routed: Routed

    package init(_ routed: Routed) { self.routed = routed }

    package func respond(to request: Request, context: Routed.Context) async throws -> Response {
        guard request.method == .head else { return try await routed.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        let response = try await routed.respond(to: Request(head: head, body: request.body), context: context)
        let body = response.body
        // No length of its own, so the GET's headers (its length, or none) are sent as they are.
        return Response(
            status: response.status, headers: response.headers,
            body: ResponseBody { writer in
                try await body.write(Discarding())
                try await writer.finish(nil)
            })
    }
}

/// Takes a body's bytes and keeps none.
private struct Discarding: ResponseBodyWriter {
    mutating func write(_ buffer: ByteBuffer) async throws {}
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
