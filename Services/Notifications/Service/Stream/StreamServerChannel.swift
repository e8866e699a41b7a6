import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import OrbitCoveInfra
import OrbitCoveModels
@_spi(WSInternal) import WSCore

/// The notifications service's connections: HTTP/1.1, where a WebSocket upgrade of the stream's
/// path whose credentials `authenticate` accepts becomes a stream, one it refuses is answered
/// with its error in the envelope (`401`, before any upgrade), and every other request goes to
/// the service's router. (Hummingbird's own upgrade channel answers every refused upgrade with
/// an empty `400`: NIO does not hand a declined upgrade request on to the HTTP pipeline, so
/// the refusal is written here, from the request head the upgrader saw.)
struct StreamServerChannel: ServerChildChannel, HTTPChannelHandler {
    enum Negotiated: Sendable {
        case stream(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, StreamIdentity)
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, APIError)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    struct SocketContext: WebSocketContext {
        let logger: Logger
    }

    let responder: Responder
    let path: String
    let maxFrameSize: Int
    let heartbeat: Duration
    /// How long an HTTP connection may be idle before it is closed (``ServiceSettings/httpIdleTimeout``).
    let idleTimeout: Duration
    let authenticate: @Sendable (HTTPRequest) async -> Result<StreamIdentity, APIError>
    let serve: @Sendable (WebSocketInboundStream, WebSocketOutboundWriter, StreamIdentity, Logger) async -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let accepted = NIOLockedValueBox<StreamIdentity?>(nil)
            let refusal = NIOLockedValueBox<APIError?>(nil)
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: maxFrameSize,
                shouldUpgrade: { [path, authenticate] channel, head in
                    let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
                    promise.completeWithTask {
                        guard head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) == path,
                            let request = try? HTTPRequest(head, secure: false, splitCookie: false)
                        else {
                            refusal.withLockedValue {
                                $0 = APIError(.badRequest, code: "BAD_REQUEST", message: "Only \(path) is a WebSocket")
                            }
                            return nil
                        }
                        switch await authenticate(request) {
                        case .success(let identity):
                            accepted.withLockedValue { $0 = identity }
                            // HTTP is over on this connection: once the upgrade removes the
                            // decoder, the bytes after the request (frames) pass where the HTTP
                            // answer sits, which reads requests only.
                            do {
                                try await channel.pipeline.removeHandler(name: MalformedRequestAnswer.name).get()
                            } catch {
                                refusal.withLockedValue { $0 = Database.unavailable }
                                return nil
                            }
                            return HTTPHeaders()
                        case .failure(let error):
                            refusal.withLockedValue { $0 = error }
                            return nil
                        }
                    }
                    return promise.futureResult
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let identity = accepted.withLockedValue({ $0 }) else {
                            throw StreamFeedError(message: "upgraded without an identity")
                        }
                        try channel.pipeline.syncOperations.addHandler(ClientFramesAreMasked())
                        let socket = try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true))
                        return .stream(socket, identity)
                    }
                })
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration<Negotiated>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // HTTP goes on: bad bytes in a body are the router's to answer now.
                        let closer = try channel.pipeline.syncOperations.handler(type: CloseOnParserError.self)
                        channel.pipeline.syncOperations.removeHandler(closer, promise: nil)
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true))
                        if let refused = refusal.withLockedValue({ $0 }) { return .refused(http, refused) }
                        return .http(http)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Negotiated>(
                upgradeConfiguration: upgrade)
            configuration.enablePipelining = false
            // Bytes that are not HTTP get a 400 in the envelope (`MalformedRequestAnswer`,
            // placed below), not NIO's empty one.
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                configuration: configuration)
            let answer = try MalformedRequestAnswer.place(in: channel.pipeline)
            try channel.pipeline.syncOperations.addHandler(HandshakeCheck(), position: .after(answer))
            try channel.pipeline.syncOperations.addHandler(
                FirstHeadDeadline(within: TimeAmount(idleTimeout)), position: .after(answer))
            try channel.pipeline.syncOperations.addHandler(CloseOnParserError())
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let error):
                try await Self.write(error, to: http)
            case .stream(let socket, let identity):
                let serve = self.serve
                _ = try await WebSocketHandler.handle(
                    type: .server,
                    configuration: .init(
                        extensions: [], autoPing: .enabled(timePeriod: heartbeat), closeTimeout: .seconds(5),
                        validateUTF8: true, maxFrameSize: maxFrameSize),
                    asyncChannel: socket, context: SocketContext(logger: logger)
                ) { inbound, outbound, context in
                    await serve(inbound, outbound, identity, context.logger)
                }
            }
        } catch {
            // A negotiation that failed (an upgrade request with a body, say) leaves the socket
            // open unless it is closed here.
            value.channel.close(promise: nil)
            logger.debug("connection ended", metadata: ["error": .string("\(error)")])
        }
    }

    /// The refusal in the error envelope, then the connection closes (the request it answers
    /// was read by the upgrader, so nothing else on it can be).
    private static func write(
        _ error: APIError, to http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    ) async throws {
        let body = try error.envelope()
        var fields = error.headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        try await http.executeThenClose { _, outbound in
            try await outbound.write(
                contentsOf: [
                    .head(HTTPResponse(status: error.status, headerFields: fields)), .body(ByteBuffer(bytes: body)),
                    .end(nil),
                ])
        }
    }
}

/// RFC 6455 §4.2.2's answers to a WebSocket handshake the upgrader could not take, in the
/// error envelope: `426` with `Sec-WebSocket-Version: 13` for another version, none or several,
/// and `400` for a `Sec-WebSocket-Key` that is not one base64 nonce of 16 bytes. NIO's upgrader
/// checks both before asking the service, and drops the connection without a word when either
/// fails (the gateway then answered `502`), so they are checked here first, between the HTTP
/// decoder and the upgrader. The connection closes after the answer. Only a connection's first
/// request may upgrade (the upgrader's rule), so the check leaves the pipeline once that request's
/// head has passed: after an upgrade, frames' bytes come this way, which it must not read.
private final class HandshakeCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard case .head(let head) = unwrapInboundIn(data), let error = Self.refusal(of: head.headers) else {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        refused = true
        context.answerThenClose(error)
    }

    /// Why a request asking to become a WebSocket cannot, or nil (it does not ask, or it can).
    static func refusal(of headers: HTTPHeaders) -> APIError? {
        func tokens(_ name: String) -> [Substring] {
            headers[name].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces)[...] }
        }
        // NIO's upgrader takes the Upgrade header alone, without `Connection: upgrade`.
        guard tokens("Upgrade").contains(where: { $0.lowercased() == "websocket" }) else { return nil }
        guard tokens("Sec-WebSocket-Version") == ["13"] else {
            return APIError(
                .upgradeRequired, code: "UPGRADE_REQUIRED",
                message: "The stream speaks WebSocket version 13: send Sec-WebSocket-Version: 13 once",
                headers: [.secWebSocketVersion: "13"])
        }
        // NIO's upgrader fails an upgrade request that carries a body, and drops the connection.
        let length = headers["Content-Length"]
        guard headers["Transfer-Encoding"].isEmpty,
            length.allSatisfy({ $0.trimmingCharacters(in: .whitespaces) == "0" })
        else {
            return APIError(.badRequest, code: "BAD_REQUEST", message: "A WebSocket handshake carries no body")
        }
        let keys = headers["Sec-WebSocket-Key"]
        guard keys.count == 1, let key = keys.first, key.utf8.count == 24,
            Data(base64Encoded: key)?.count == 16
        else {
            return APIError(
                .badRequest, code: "BAD_REQUEST",
                message: "A WebSocket handshake sends one Sec-WebSocket-Key: a base64 nonce of 16 bytes")
        }
        return nil
    }
}

/// Closes a connection whose bytes stopped being HTTP in the middle of a request (a broken
/// chunk): ``MalformedRequestAnswer`` answers bad bytes between requests, and passes these on,
/// where nobody may own the socket yet (an upgrade still undecided), so without this a stranger
/// could hold sockets open. Closing it also fails the negotiation, which ends the connection's
/// task.
private final class CloseOnParserError: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }
}

/// Closes a connection whose first request head has not come within `within` of its opening
/// (nothing sent, or a head sent a byte at a time). Until that head, and the upgrade it may ask
/// for, no HTTP handler watches the connection; after it, HTTP's idle timeout does (or, for a
/// stream, its heartbeat), so this one leaves the pipeline.
private final class FirstHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    private let within: TimeAmount
    private var deadline: Scheduled<Void>?

    init(within: TimeAmount) { self.within = within }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            deadline?.cancel()
            deadline = nil
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: within) { channel.close(promise: nil) }
    }
}

/// RFC 6455 §5.1: "a server MUST close the connection upon receiving a frame that is not
/// masked", with `1002` (protocol error). The WebSocket library reads unmasked frames as it
/// reads masked ones, so they are stopped here, before it; nothing after such a frame is read.
private final class ClientFramesAreMasked: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard unwrapInboundIn(data).maskKey == nil else {
            context.fireChannelRead(data)
            return
        }
        refused = true
        var code = context.channel.allocator.buffer(capacity: 2)
        code.write(webSocketErrorCode: .protocolError)
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)), promise: nil)
        context.close(promise: nil)
    }
}

// swift-format-ignore: NeverForceUnwrap
// The name is a valid header token, so the failable initialiser cannot fail.
extension HTTPField.Name {
    fileprivate static let secWebSocketVersion = Self("Sec-WebSocket-Version")!
}
