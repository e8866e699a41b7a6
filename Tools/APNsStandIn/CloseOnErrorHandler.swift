import Logging
import NIOCore

/// Last in a connection's pipeline: a connection error (a TLS failure, or a client that does not
/// speak HTTP/2, such as one that negotiated no ALPN and sent HTTP/1.1) ends the connection.
final class CloseOnErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Never

    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("closing APNs stand-in connection", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
