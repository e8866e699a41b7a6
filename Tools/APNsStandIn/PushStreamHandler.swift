import NIOCore
import NIOHTTP1

/// Serves one HTTP/2 stream (one push request) behind `HTTP2FramePayloadToHTTP1ServerCodec`:
/// gathers the request, asks the responder, and answers after the reply's delay.
final class PushStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: PushResponder
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyLength = 0

    init(responder: PushResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            bodyLength += buffer.readableBytes
            let room = max(0, PushRequest.bodyKeptLimit - body.count)
            body += buffer.readableBytesView.prefix(room)
        case .end:
            guard let head else { return }
            let request = PushRequest(
                method: head.method, path: head.uri, headers: head.headers, body: body, bodyLength: bodyLength)
            respond(to: responder.answer(request), context: context)
        }
    }

    private func respond(to answer: PushResponder.Answer, context: ChannelHandlerContext) {
        guard answer.delay > .zero else { return write(answer, context: context) }
        context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(answer.delay)) {
            self.write(answer, context: context)
        }
    }

    private func write(_ answer: PushResponder.Answer, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("apns-id", answer.apnsId)])
        let body = answer.body
        if let body {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(body.count))
        }
        let head = HTTPResponseHead(version: .http2, status: .init(statusCode: answer.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body {
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
