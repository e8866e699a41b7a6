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
