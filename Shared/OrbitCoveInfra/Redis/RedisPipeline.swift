import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Redis commands pipelined over a few NIO channels on the shared event loops, so that a command
/// costs no thread of its own: the caller hands it to a connection's event loop, which writes it
/// with whatever else came in that turn, and the reply resumes the caller.
///
/// The invariants, each pinned by a test in `RedisTests`:
/// - Redis answers in the order commands were written, so a connection keeps a FIFO of what it
///   wrote and completes its head with each reply. An entry leaves only with its reply or with
///   its connection: a caller that stopped waiting leaves its entry behind, and its late reply is
///   read and dropped. Taking the entry out would hand every later caller its neighbour's reply.
/// - A caller waits at most until its deadline, whether its connection is still opening or its
///   reply is late: the connection's timer fails it, and it stops being the caller of anything.
/// - A connection whose oldest command has had no reply for `socketTimeout` (a hung server) is
///   closed, failing everything on it; the next command opens a new one.
/// - Everything about a connection lives on its event loop; callers only `execute` there.
final class RedisPipelines: Sendable {
    struct Configuration: Sendable {
        var settings: RedisSettings
        var socketTimeout: TimeAmount
        var budget: CommandBudget
        /// What commands pending or sent after the stop fail with.
        var stopped: RedisError
        var logger: Logger
    }

    private let slots: [NIOLoopBoundBox<RedisSlot>]
    private let next = Atomic<UInt>(0)

    init(connections: Int, configuration: Configuration, group: any EventLoopGroup) {
        slots = (0..<max(1, connections)).map { _ in
            let loop = group.next()
            return NIOLoopBoundBox.makeBoxSendingValue(
                RedisSlot(loop: loop, configuration: configuration), eventLoop: loop)
        }
    }

    /// Sends a command on the next connection, round robin: under load every connection has
    /// commands in flight, and Redis serves them one at a time whichever socket they came on.
    func send(_ arguments: [String], deadline: NIODeadline) -> EventLoopFuture<RedisReply> {
        let slot = slots[Int(next.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(slots.count))]
        var request = ByteBuffer()
        request.writeRedisCommand(arguments)
        let promise = slot.eventLoop.makePromise(of: RedisReply.self)
        slot.eventLoop.execute { [request] in slot.value.enqueue(request, promise: promise, deadline: deadline) }
        return promise.futureResult
    }

    /// Closes every connection, failing what waits on it; commands sent later fail at once.
    func close() async {
        let closed = slots.map { slot in slot.eventLoop.flatSubmit { slot.value.stop() } }
        for connection in closed { try? await connection.get() }
    }
}

/// Commands accepted and not yet settled (answered, or dropped with their connection), against a
/// bound: beyond it a command fails at once instead of piling up behind a hung server.
final class CommandBudget: Sendable {
    private let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    func take() -> Bool {
        guard used.add(1, ordering: .relaxed).newValue <= limit else {
            used.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func release() { used.subtract(1, ordering: .relaxed) }
}

/// One of the connections, on its event loop: opened on first use, and again on the first use
/// after it closed.
final class RedisSlot {
    private let loop: any EventLoop
    private let configuration: RedisPipelines.Configuration
    private var connection: RedisPipelineHandler?
    private var stopped = false

    init(loop: any EventLoop, configuration: RedisPipelines.Configuration) {
        self.loop = loop
        self.configuration = configuration
    }

    func enqueue(_ request: ByteBuffer, promise: EventLoopPromise<RedisReply>, deadline: NIODeadline) {
        do {
            guard !stopped else { throw configuration.stopped }
            let connection = try self.connection.flatMap { $0.isOpen ? $0 : nil } ?? connect()
            connection.enqueue(request, promise: promise, deadline: deadline)
        } catch {
            configuration.budget.release()
            promise.fail(error)
        }
    }

    func stop() -> EventLoopFuture<Void> {
        stopped = true
        return connection?.close(because: configuration.stopped) ?? loop.makeSucceededVoidFuture()
    }

    private func connect() throws -> RedisPipelineHandler {
        let handler = try RedisPipelineHandler(configuration: configuration, loop: loop)
        connection = handler
        let bound = NIOLoopBound(handler, eventLoop: loop)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(configuration.socketTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(bound.value) }
            }
        let settings = configuration.settings
        // A literal address needs no resolver (which runs getaddrinfo on a dispatch queue).
        let connected =
            if let address = try? SocketAddress(ipAddress: settings.host, port: settings.port) {
                bootstrap.connect(to: address)
            } else {
                bootstrap.connect(host: settings.host, port: settings.port)
            }
        connected.whenFailure { error in
            bound.value.close(
                because: RedisError(message: "cannot connect to \(settings.host):\(settings.port): \(error)"))
        }
        return handler
    }
}

/// A connection's end of the pipeline: writes commands as they come and completes them, in the
/// same order, with the replies that hiredis' reader finds in what the channel reads.
final class RedisPipelineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct Pending {
        /// Completed by the reply; nil once its caller stopped waiting (the reply is then
        /// dropped), and for the commands that set the connection up (AUTH, SELECT).
        var promise: EventLoopPromise<RedisReply>?
        let deadline: NIODeadline
        let since: NIODeadline
        let isSetup: Bool
    }

    private let configuration: RedisPipelines.Configuration
    private let loop: any EventLoop
    private let reader: RedisReplyReader
    private var context: ChannelHandlerContext?
    private(set) var isOpen = true
    private var isActive = false
    /// Commands are written once the channel is active; until then they wait here.
    private var unsent: [ByteBuffer] = []
    private var pending = CircularBuffer<Pending>()
    private var flushScheduled = false
    private var timer: (deadline: NIODeadline, task: Scheduled<Void>)?

    init(configuration: RedisPipelines.Configuration, loop: any EventLoop) throws {
        self.configuration = configuration
        self.loop = loop
        self.reader = try RedisReplyReader()
        let settings = configuration.settings
        if let password = settings.password { setUp(["AUTH", password]) }
        if settings.database != 0 { setUp(["SELECT", String(settings.database)]) }
    }

    private func setUp(_ command: [String]) {
        var request = ByteBuffer()
        request.writeRedisCommand(command)
        append(request, Pending(promise: nil, deadline: .distantFuture, since: .now(), isSetup: true))
    }

    func enqueue(_ request: ByteBuffer, promise: EventLoopPromise<RedisReply>, deadline: NIODeadline) {
        append(request, Pending(promise: promise, deadline: deadline, since: .now(), isSetup: false))
    }

    private func append(_ request: ByteBuffer, _ entry: Pending) {
        let oldest = pending.first?.since ?? entry.since
        pending.append(entry)
        arm(at: min(entry.deadline, oldest + configuration.socketTimeout))
        guard let context, isActive else { return unsent.append(request) }
        context.write(wrapOutboundOut(request), promise: nil)
        guard !flushScheduled else { return }
        // One flush (one system call) for all the commands handed over in this turn of the loop.
        flushScheduled = true
        loop.assumeIsolated().execute {
            self.flushScheduled = false
            self.context?.flush()
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if !isOpen { context.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        isActive = true
        for request in unsent { context.write(wrapOutboundOut(request), promise: nil) }
        unsent.removeAll()
        context.flush()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard isOpen else { return }
        do {
            try unwrapInboundIn(data).withUnsafeReadableBytes { try reader.feed($0) }
            while let reply = try reader.next() {
                guard let entry = pending.popFirst() else { throw RedisError(message: "a reply nobody asked for") }
                if entry.isSetup {
                    if case .error(let message) = reply { throw RedisError(message: "connection set-up: \(message)") }
                } else {
                    configuration.budget.release()
                    entry.promise?.succeed(reply)
                }
            }
        } catch {
            close(because: error as? RedisError ?? RedisError(message: "\(error)"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        close(because: RedisError(message: "connection closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        close(because: RedisError(message: "connection failed: \(error)"))
    }

    /// Fails everything pending with `error` and closes the channel; the slot opens a new one
    /// for the next command.
    @discardableResult
    func close(because error: RedisError) -> EventLoopFuture<Void> {
        let closed = context?.channel.closeFuture ?? loop.makeSucceededVoidFuture()
        guard isOpen else { return closed }
        isOpen = false
        timer?.task.cancel()
        timer = nil
        unsent.removeAll()
        let failed = pending
        pending.removeAll()
        for entry in failed where !entry.isSetup {
            configuration.budget.release()
            entry.promise?.fail(error)
        }
        context?.close(promise: nil)
        return closed
    }

    /// Makes sure the timer fires at `deadline` at the latest. One timer per connection, moved
    /// only earlier, rather than one per command: while commands flow it fires about once per
    /// command timeout.
    private func arm(at deadline: NIODeadline) {
        if let timer, timer.deadline <= deadline { return }
        timer?.task.cancel()
        timer = (deadline, loop.assumeIsolated().scheduleTask(deadline: deadline) { self.expire() })
    }

    /// Fails the callers whose deadline has passed, keeping their entries; closes the connection
    /// if its oldest command has waited longer than the socket timeout.
    private func expire() {
        timer = nil
        guard let oldest = pending.first else { return }
        let now = NIODeadline.now()
        var next = oldest.since + configuration.socketTimeout
        guard next > now else {
            configuration.logger.warning(
                "redis gave no reply within the socket timeout; closing the connection",
                metadata: ["waiting": .stringConvertible(pending.count)])
            close(because: RedisError(message: "no reply within \(configuration.socketTimeout)"))
            return
        }
        for index in pending.indices {
            guard let promise = pending[index].promise else { continue }
            if pending[index].deadline <= now {
                pending[index].promise = nil
                promise.fail(RedisError(message: "timed out"))
            } else {
                next = min(next, pending[index].deadline)
            }
        }
        arm(at: next)
    }
}
