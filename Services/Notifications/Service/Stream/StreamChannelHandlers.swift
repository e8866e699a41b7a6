import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket
import OrbitCoveInfra

// The stream's channel's own handlers (``StreamServerChannel``): the handshake check, the
// closers of broken and silent connections, and the masking rule for client frames.

/// RFC 6455 §4.2.2's answers to a WebSocket handshake the upgrader could not take, in the
/// error envelope: `426` with `Sec-WebSocket-Version: 13` for another version, none or several,
/// and `400` for a `Sec-WebSocket-Key` that is not one base64 nonce of 16 bytes. NIO's upgrader
/// checks both before asking the service, and drops the connection without a word when either
/// fails (the gateway then answered `502`), so they are checked here first, between the HTTP
/// decoder and the upgrader. The connection closes after the answer. Only a connection's first
/// request may upgrade (the upgrader's rule), so the check leaves the pipeline once that request's
/// head has passed: after an upgrade, frames' bytes come this way, which it must not read.
final class HandshakeCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        if let error = Self.refusal(of: head.headers) {
            refused = true
            context.answerThenClose(error)
            return
        }
        // An upgrade to anything but a WebSocket is ignored, as RFC 9110 §7.8 lets a server:
        // NIO's upgrader, finding no upgrader for it, drops the request without a word.
        if !head.headers["Upgrade"].isEmpty, !Self.asksForWebSocket(head.headers) {
            head.headers.remove(name: "Upgrade")
            let connection = Self.tokens("Connection", in: head.headers).filter { $0.lowercased() != "upgrade" }
            head.headers.remove(name: "Connection")
            if !connection.isEmpty { head.headers.add(name: "Connection", value: connection.joined(separator: ", ")) }
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    static func tokens(_ name: String, in headers: HTTPHeaders) -> [Substring] {
        headers[name].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces)[...] }
    }

    /// Whether the request asks to become a WebSocket (the Upgrade header alone, as NIO's
    /// upgrader reads it, without `Connection: upgrade`).
    static func asksForWebSocket(_ headers: HTTPHeaders) -> Bool {
        tokens("Upgrade", in: headers).contains { $0.lowercased() == "websocket" }
    }

    /// Why a request asking to become a WebSocket cannot, or nil (it does not ask, or it can).
    static func refusal(of headers: HTTPHeaders) -> APIError? {
        guard asksForWebSocket(headers) else { return nil }
        guard tokens("Sec-WebSocket-Version", in: headers) == ["13"] else {
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
final class CloseOnParserError: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }
}

/// Closes a connection whose first request head has not come within `within` of its opening
/// (nothing sent, or a head sent a byte at a time). Until that head, and the upgrade it may ask
/// for, no HTTP handler watches the connection; after it, HTTP's idle timeout does (or, for a
/// stream, its heartbeat), so this one leaves the pipeline. A service shutting down closes such
/// a connection at once, as Hummingbird closes an idle HTTP one: nothing was asked on it.
final class FirstHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
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
final class ClientFramesAreMasked: ChannelInboundHandler {
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
