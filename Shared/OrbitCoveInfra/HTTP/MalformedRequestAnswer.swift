import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Bytes the HTTP parser refuses (a control byte in a header, raw non-ASCII in the target, a
/// broken request line) are answered `400 BAD_REQUEST` in the error envelope, then the
/// connection closes. Hummingbird, and NIO's own error handling, answer them with an empty
/// `400` the gateway passes on as it is (a hostile probe's). Sits right after the HTTP decoder:
/// a refusal waits for the responses still owed on the connection (requests read before the
/// bad bytes), so it never lands inside one, and is the connection's last answer. Bad bytes in
/// the middle of a request's body (a broken chunk) are the body reader's error, passed on as
/// before (the service answers it `400` too, `ErrorRendering`, and the connection closes), or,
/// when that request was answered before its body was read, just close the connection.
package final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias InboundOut = HTTPServerRequestPart
    package typealias OutboundIn = HTTPServerResponsePart
    package typealias OutboundOut = HTTPServerResponsePart

    /// Requests read whose response has not ended yet.
    private var owed = 0
    /// A request's head was read and its end not yet.
    private var reading = false
    private var refusing = false
    /// Bad bytes came inside a request's body: once that request, and any before it, is
    /// answered, the connection closes, before anything after it (Hummingbird's own empty `400`)
    /// can be written.
    private var broken = false

    package init() {}

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            owed += 1
            reading = true
        case .end: reading = false
        case .body: break
        }
        context.fireChannelRead(data)
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ended: Bool
        if case .end = unwrapOutboundIn(data) { ended = true } else { ended = false }
        guard ended else { return context.write(data, promise: promise) }
        owed = max(0, owed - 1)
        guard broken, owed == 0 else {
            context.write(data, promise: promise)
            if refusing, owed == 0 { context.answerThenClose(Self.refusal) }
            return
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        if let promise { written.futureResult.cascade(to: promise) }
        context.writeAndFlush(data, promise: written)
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        if reading {
            // Answered already (refused before its body was read): nothing more to say, and
            // nothing more can be read.
            guard owed > 0 else { return context.close(promise: nil) }
            broken = true
            return context.fireErrorCaught(error)
        }
        // Nothing after the bad bytes can be read; what is owed is still answered first.
        guard !refusing else { return }
        refusing = true
        if owed == 0 { context.answerThenClose(Self.refusal) }
    }

    package static let refusal = APIError(.badRequest, code: "BAD_REQUEST", message: "The request is malformed")
}

extension ChannelHandlerContext {
    /// `error` in the envelope as the connection's last answer, written as HTTP/1.1 parts from a
    /// handler after the decoder; the connection closes once it is sent.
    package func answerThenClose(_ error: APIError) {
        let body = (try? error.envelope()) ?? []
        var headers = HTTPHeaders([
            ("Content-Type", "application/json; charset=utf-8"), ("Content-Length", String(body.count)),
            ("Connection", "close"),
        ])
        for field in error.headers { headers.add(name: field.name.rawName, value: field.value) }
        let status = HTTPResponseStatus(statusCode: error.status.code)
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let channel = self.channel
        writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 as Hummingbird serves it, with bytes that are not a request answered in the
    /// envelope (``MalformedRequestAnswer``), and a connection with nothing read for
    /// `idleTimeout` closed (one that sends nothing, a request head or body that stops coming, a
    /// kept-alive connection between requests; never one whose request was read in full): what
    /// every service but the notifications service runs (its stream's channel does the same).
    package static func enveloped(idleTimeout: Duration) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            EnvelopedHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: TimeAmount(idleTimeout))))
        }
    }
}

/// Hummingbird's HTTP/1.1 channel with ``MalformedRequestAnswer`` placed after its decoder.
struct EnvelopedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try MalformedRequestAnswer.place(in: channel.pipeline)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension MalformedRequestAnswer {
    /// Adds one right after the pipeline's HTTP decoder; returns it.
    @discardableResult
    package static func place(in pipeline: ChannelPipeline) throws -> MalformedRequestAnswer {
        let answer = MalformedRequestAnswer()
        let decoder = try pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
        try pipeline.syncOperations.addHandler(answer, name: name, position: .after(decoder))
        return answer
    }

    /// Its name in the pipeline, to take it out by (a connection that stops speaking HTTP).
    package static let name = "malformed-request-answer"
}
