import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix

/// A local stand-in for Apple's push notification service: the HTTP/2 provider API over TLS
/// (`POST /3/device/<token>`), with provider tokens checked and Apple's statuses and reasons.
/// Tests script replies per device token and read back what it received.
package final class APNsStandIn: Sendable {
    package let port: Int
    private let responder: PushResponder
    private let serverChannel: any Channel
    private let connections: OpenConnections
    private let logger: Logger

    private init(
        port: Int, responder: PushResponder, serverChannel: any Channel, connections: OpenConnections, logger: Logger
    ) {
        self.port = port
        self.responder = responder
        self.serverChannel = serverChannel
        self.connections = connections
        self.logger = logger
    }

    /// Starts on 127.0.0.1 at `port` (0 = any free port) with the PEM certificate chain and key files.
    ///
    /// - Parameters:
    ///   - providerKey: The public half of the key provider tokens are signed with (ES256).
    ///   - teamId: The provider tokens' `iss`.
    ///   - keyId: The provider tokens' `kid`.
    ///   - now: The clock provider tokens' ages are measured by and requests are stamped with.
    ///   - keepsRecords: Whether `received()` keeps every request; a long benchmark may not want it.
    ///   - onAnswer: Called on the connection's event loop for each answered request; must be quick.
    package static func start(
        port: Int = 0,
        certificateChain: String,
        privateKey: String,
        providerKey: P256.Signing.PublicKey,
        teamId: String,
        keyId: String,
        logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        now: @escaping @Sendable () -> Date = { Date() },
        keepsRecords: Bool = true,
        onAnswer: (@Sendable (Received) -> Void)? = nil
    ) async throws -> APNsStandIn {
        let tokenCheck = ProviderTokenCheck(publicKey: providerKey, teamId: teamId, keyId: keyId)
        let responder = PushResponder(
            tokenCheck: tokenCheck, now: now, keepsRecords: keepsRecords, logger: logger, onAnswer: onAnswer)
        let connections = OpenConnections()
        let tls = try StandInServer.tlsContext(certificateChain: certificateChain, privateKey: privateKey)
        let channel = try await StandInServer.bind(
            host: "127.0.0.1", port: port, group: eventLoopGroup, tls: tls, responder: responder,
            connections: connections, logger: logger)
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close()
            throw StandInError.noLocalAddress
        }
        logger.info("APNs stand-in listening", metadata: ["port": "\(boundPort)"])
        return APNsStandIn(
            port: boundPort, responder: responder, serverChannel: channel, connections: connections, logger: logger)
    }

    /// Adds `replies` to those `token` still has; each request for it takes the next one.
    package func script(_ token: String, _ replies: [Reply]) {
        responder.script(token, replies)
    }

    package func received() -> [Received] {
        responder.received()
    }

    /// Every distinct provider token presented so far, valid or not.
    package func providerTokensSeen() -> Set<String> {
        responder.providerTokensSeen()
    }

    /// Stops listening and closes the open connections.
    package func shutdown() async throws {
        do {
            try await serverChannel.close()
        } catch ChannelError.alreadyClosed {
            // Shut down before: nothing left to do.
        }
        await connections.closeAll()
        logger.info("APNs stand-in stopped", metadata: ["port": "\(port)"])
    }
}

enum StandInError: Error {
    case noLocalAddress
}
