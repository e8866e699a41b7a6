import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOWebSocket
import OrbitCoveInfra
import OrbitCoveModels
import ServiceLifecycle
import WSCore

/// `GET /api/v1/me/stream` (a WebSocket) and `POST /api/v1/me/stream-tickets`: every change a
/// member may sync, as it is committed, with the sync token after it (docs/ARCHITECTURE.md,
/// "Realtime"). Its parts: the ``StreamChangeFeed`` (one instance reads the change log and
/// publishes it to Redis), the ``StreamHub`` (each instance's sockets, fed from Redis), and per
/// socket a ``StreamSession`` (what that client has, read from the log where Redis cannot prove
/// it).
struct RealtimeStream {
    /// Largest client frame (a subscription to 500 communities with their tokens fits).
    static let largestClientFrame = 64 * 1024
    static let noCredentials = APIError.unauthenticated(
        "UNAUTHENTICATED", "Open the stream with an access token or a ticket from /api/v1/me/stream-tickets")

    let hub: StreamHub
    let feed: StreamChangeFeed
    let tickets: StreamTickets
    let log: StreamLog
    let unread: @Sendable (UUID) async throws -> Int
    let verifier: AccessTokenVerifier
    let settings: StreamSettings
    let logger: Logger

    init(
        kit: ServiceKit, settings: StreamSettings, unread: @escaping @Sendable (UUID) async throws -> Int,
        logger: Logger
    ) {
        let listenersArrived = Doorbell()
        hub = StreamHub(
            database: kit.database, redis: kit.redis, maxStreamsPerUser: settings.maxStreamsPerUser, logger: logger,
            listenersArrived: listenersArrived)
        feed = StreamChangeFeed(
            database: kit.database, redis: kit.redis, settings: settings, logger: logger,
            listenersArrived: listenersArrived)
        tickets = StreamTickets(redis: kit.redis)
        log = StreamLog(database: kit.database, logger: logger)
        verifier = kit.runtime.makeTokenVerifier()
        self.unread = unread
        self.settings = settings
        self.logger = logger
    }

    var services: [any Service] { [hub, feed] }

    /// The ticket route, and what a `GET` of the stream that asked for no upgrade gets: `401`
    /// without an access token, `426` with one. (A refused upgrade is answered by
    /// ``StreamServerChannel``.)
    func register(on router: Router<AppRequestContext>) {
        let tickets = self.tickets
        let verifier = self.verifier
        let log = self.log
        router.post("/api/v1/me/stream-tickets") { request, context in
            _ = try context.requireUser()
            let (userId, expiresAt) = try await verifier.verifiedBearer(request.headers[.authorization] ?? "")
            try await log.requireAccount(of: userId)
            return try Response.data(
                try await tickets.issue(for: userId, until: expiresAt), status: .created, requestId: context.requestId)
        }
        router.get("/api/v1/me/stream") { request, context -> Response in
            // A ticket opens only an upgrade: without one, this is an unauthenticated request.
            guard context.userId != nil else { throw Self.noCredentials }
            if let ticket = request.uri.queryParameters.get("ticket"), ticket.utf8.count > 100 {
                throw APIError.validation(["ticket": "is not a stream ticket"])
            }
            throw APIError(
                .upgradeRequired, code: "UPGRADE_REQUIRED",
                message: "The stream is a WebSocket: send Upgrade: websocket",
                headers: [.upgrade: "websocket"])
        }
    }

    /// The HTTP server with WebSocket upgrades for the stream's path; other requests, and
    /// upgrades it refuses, go to the service's router. HTTP connections idle for
    /// `idleTimeout` are closed; streams have their heartbeat.
    func server(idleTimeout: Duration) -> HTTPServerBuilder {
        let stream = self
        return HTTPServerBuilder { responder in
            StreamServerChannel(
                responder: responder, path: "/api/v1/me/stream", maxFrameSize: Self.largestClientFrame,
                heartbeat: .seconds(stream.settings.heartbeatSeconds), idleTimeout: idleTimeout,
                authenticate: { request in await stream.authenticate(request) },
                serve: { inbound, outbound, identity, logger in
                    await stream.serve(inbound, outbound, identity, logger: logger)
                })
        }
    }

    /// Who an upgrade is from, by its bearer token or its ticket; a refusal is the error the
    /// client gets instead of the upgrade.
    private func authenticate(_ request: HTTPRequest) async -> Result<StreamIdentity, APIError> {
        do {
            if let authorization = request.headerFields[.authorization] {
                let (userId, expiresAt) = try await verifier.verifiedBearer(authorization)
                try await log.requireAccount(of: userId)
                return .success(StreamIdentity(userId: userId, expiresAt: expiresAt))
            }
            let query = URLComponents(string: request.path ?? "")?.queryItems ?? []
            // Outside the router, so its check of repeated parameters is made here.
            let repeated = RepeatedQueryParametersMiddleware.repeated(in: query.map(\.name))
            guard repeated.isEmpty else {
                throw APIError.validation(Dictionary(uniqueKeysWithValues: repeated.map { ($0, "must be given once") }))
            }
            guard let ticket = query.first(where: { $0.name == "ticket" })?.value else {
                throw Self.noCredentials
            }
            guard let (userId, expiresAt) = try await tickets.redeem(ticket) else {
                throw APIError.unauthenticated("TICKET_INVALID", "The stream ticket is unknown, used or expired")
            }
            try await log.requireAccount(of: userId)
            return .success(StreamIdentity(userId: userId, expiresAt: expiresAt))
        } catch let error as APIError {
            return .failure(error)
        } catch {
            // Redis (the ticket) or PostgreSQL (the account) did not answer.
            return .failure(APIError.unavailable("The stream is unavailable; try again"))
        }
    }

    private func serve(
        _ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter, _ identity: StreamIdentity,
        logger: Logger
    ) async {
        let connection = StreamConnection(userId: identity.userId, bound: settings.sendBuffer)
        guard hub.add(connection) else {
            await Self.close(outbound, .tooManyStreams, "This user has too many streams open")
            return
        }
        defer {
            connection.finish()
            hub.remove(connection)
        }
        // Fresh unread counts, one at a time: a burst of hints is one count.
        let (unreadHints, unreadHint) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        defer { unreadHint.finish() }
        let session = StreamSession(
            connection: connection, hub: hub, log: log, maxSubscriptions: settings.maxSubscriptions,
            unreadChanged: { unreadHint.yield() })
        var ending: Ending?
        do {
            // The first of these to end ends the stream, with the close it returns.
            ending = try await withThrowingTaskGroup(of: Ending?.self) { group in
                group.addTask {
                    try await Self.read(inbound, into: connection, following: settings.maxSubscriptions)
                }
                group.addTask {
                    var session = session
                    try await session.start()
                    let count = try await unread(identity.userId)
                    try await outbound.write(.text(Self.text(StreamFrame(type: .unread, count: count))))
                    for await event in connection.events {
                        try await session.handle(event) { frame in try await outbound.write(.text(Self.text(frame))) }
                    }
                    return nil
                }
                group.addTask {
                    for await _ in unreadHints {
                        guard let count = try? await unread(identity.userId) else { continue }
                        try await outbound.write(.text(Self.text(StreamFrame(type: .unread, count: count))))
                    }
                    return nil
                }
                group.addTask {
                    for await _ in connection.overflowed {
                        return (.unknown(StreamCloseCode.tooSlow.rawValue), "Too slow: frames piled up")
                    }
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(max(0, identity.expiresAt.timeIntervalSinceNow)))
                    return (.unknown(StreamCloseCode.tokenExpired.rawValue), "The access token expired: reconnect")
                }
                group.addTask {
                    try await gracefulShutdown()
                    return (.goingAway, "The service is stopping: reconnect")
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
        } catch is CancellationError {
        } catch {
            if StreamLog.isAccountDeleted(error) {
                // Erased while the stream was open: reconnecting would not help.
                ending = (.unknown(StreamCloseCode.accountDeleted.rawValue), "This account has been deleted")
            } else if let code = Self.refusal(in: error) {
                // The library refused a client frame (a text frame that is not UTF-8): its code.
                ending = (code, "The frame was refused")
            } else {
                logger.info("stream ended on an error", metadata: ["error": .string(logDescription(of: error))])
                ending = (.unexpectedServerError, "The stream failed: reconnect")
            }
        }
        if let (code, reason) = ending { await Self.close(outbound, code, reason) }
    }

    typealias Ending = (code: WebSocketErrorCode, reason: String)

    /// The close code the WebSocket library chose for a client frame it refused while we read
    /// (`1007` for a text frame that is not UTF-8). Its error type is internal to the library,
    /// so the code is read from the error's payload; any other error has none.
    static func refusal(in error: any Error) -> WebSocketErrorCode? {
        Mirror(reflecting: error).children.lazy.compactMap { $0.value as? WebSocketErrorCode }.first
    }

    /// Reads client frames into the queue until the client closes; a frame that is not a
    /// stream frame ends the stream with the code returned.
    private static func read(
        _ inbound: WebSocketInboundStream, into connection: StreamConnection, following: Int
    ) async throws -> Ending? {
        var allowance = StreamFrameAllowance()
        for try await message in inbound.messages(maxSize: largestClientFrame) {
            guard allowance.take(at: .now) else {
                return (.policyViolation, "Too many frames: at most \(StreamFrameAllowance.perSecond) a second")
            }
            guard case .text(let text) = message else { return (.unacceptableData, "Send text frames") }
            switch StrictJSON.problem(in: Array(text.utf8)) {
            case .repeatedKey(let key)?: return (.policyViolation, "The key \(key) is named twice")
            case .trailingComma?, .notJSON?, .numberOutOfRange?:
                return (.policyViolation, "Not a stream frame: send subscribe or unsubscribe")
            case nil: break
            }
            guard let frame = try? JSONDecoder().decode(StreamClientFrame.self, from: Data(text.utf8)) else {
                return (.policyViolation, "Not a stream frame: send subscribe or unsubscribe")
            }
            // A frame naming many communities costs more: each one subscribed reads the log.
            let named = frame.communities?.count ?? frame.communityIds?.count ?? 0
            guard allowance.take(StreamFrameAllowance.cost(naming: named, following: following) - 1, at: .now) else {
                return (.policyViolation, "Too many frames: at most \(StreamFrameAllowance.perSecond) a second")
            }
            connection.offer(.client(frame))
        }
        return nil
    }

    private static func close(_ outbound: WebSocketOutboundWriter, _ code: StreamCloseCode, _ reason: String) async {
        await close(outbound, .unknown(code.rawValue), reason)
    }

    /// Closes with a code, giving up after two seconds (a client that stopped reading never
    /// takes the close frame); the socket goes when the handler returns.
    private static func close(_ outbound: WebSocketOutboundWriter, _ code: WebSocketErrorCode, _ reason: String) async {
        // A close frame is a control frame: at most 125 bytes, two of them the code.
        var fitted = reason
        while fitted.utf8.count > 123 { fitted.removeLast() }
        let reason = fitted
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await outbound.close(code, reason: reason) }
            group.addTask { try? await Task.sleep(for: .seconds(2)) }
            await group.next()
            group.cancelAll()
        }
    }

    static func text(_ frame: StreamFrame) throws -> String {
        String(decoding: try JSONCoding.encoder.encode(frame), as: UTF8.self)
    }
}

/// Who opened a stream, and until when their access token (or the one their ticket was issued
/// for) is valid.
struct StreamIdentity: Sendable {
    var userId: UUID
    var expiresAt: Date
}

/// What a client may send: a burst of `burst` frames, then `perSecond` a second (each
/// subscribe reads the change log; an app sends a handful a minute). A frame naming `n`
/// communities counts as `1 + n / 20` frames, so the largest a stream follows (500) fits in a
/// burst; names past what a stream follows are refused without reading the log, and cost
/// nothing more.
package struct StreamFrameAllowance {
    package static let perSecond = 10
    package static let burst = 30
    private var tokens = Double(burst)
    private var last: ContinuousClock.Instant?

    package init() {}

    /// What a frame naming `communities` communities costs, in frames, on a stream that follows
    /// at most `following` (``NotificationsSettings/maxSubscriptions``).
    package static func cost(naming communities: Int, following: Int) -> Double {
        1 + Double(min(communities, following)) / 20
    }

    /// Takes `cost` frames' tokens at `now`; false when fewer are left.
    package mutating func take(_ cost: Double = 1, at now: ContinuousClock.Instant) -> Bool {
        if let last {
            let (seconds, attoseconds) = (now - last).components
            let elapsed = Double(seconds) + Double(attoseconds) * 1e-18
            tokens = min(Double(Self.burst), tokens + elapsed * Double(Self.perSecond))
        }
        last = now
        guard tokens >= cost else { return false }
        tokens -= cost
        return true
    }
}
