import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// The listening socket and each connection's pipeline: TLS offering only "h2" (as APNs does),
/// HTTP/2, and per stream the HTTP/1-style codec in front of `PushStreamHandler`.
enum StandInServer {
    static func tlsContext(certificateChain: String, privateKey: String) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateChain).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: privateKey, format: .pem)))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["h2"]
        return try NIOSSLContext(configuration: configuration)
    }

    static func bind(
        host: String, port: Int, group: any EventLoopGroup, tls: NIOSSLContext, responder: PushResponder,
        connections: OpenConnections, logger: Logger
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                connections.track(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try configure(channel, tls: tls, responder: responder, logger: logger)
                }
            }
            .bind(host: host, port: port)
            .get()
    }

    private static func configure(
        _ channel: any Channel, tls: NIOSSLContext, responder: PushResponder, logger: Logger
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(NIOSSLServerHandler(context: tls))
        _ = try pipeline.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandlers(
                    HTTP2FramePayloadToHTTP1ServerCodec(), PushStreamHandler(responder: responder))
            }
        }
        try pipeline.addHandler(CloseOnErrorHandler(logger: logger))
    }
}
