import Foundation
import Glibc
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// What a handler decided about a delivery.
package enum DeliveryOutcome: Sendable, Equatable {
    /// Done (or already done before): remove it from the queue.
    case ack
    /// Failed for now: put it back for another attempt (counts toward the delivery limit).
    case retry
    /// Can never succeed: dead-letter it at once.
    case reject
}

/// Consumes one queue with bounded prefetch and manual acknowledgement. The rabbitmq-c
/// connection lives on a dedicated thread; deliveries cross to async handlers (up to
/// `prefetch` at once) and their outcomes cross back to be acked on that thread.
/// Reconnects with jittered back-off after any connection failure; on graceful shutdown it
/// stops taking deliveries, lets running handlers finish, and returns the rest to the queue.
package final class AMQPConsumer: Service, Sendable {
    package typealias Handler = @Sendable (IncomingMessage) async -> DeliveryOutcome

    private let settings: AMQPSettings
    private let queue: String
    private let topology: QueueTopology
    private let prefetch: Int
    private let logger: Logger
    private let handler: Handler
    private let drainTimeout: Duration

    package init(
        settings: AMQPSettings, queue: String, topology: QueueTopology, prefetch: Int = 16,
        drainTimeout: Duration = .seconds(20), logger: Logger, handler: @escaping Handler
    ) {
        self.settings = settings
        self.queue = queue
        self.topology = topology
        self.prefetch = max(1, prefetch)
        self.drainTimeout = drainTimeout
        self.logger = logger
        self.handler = handler
    }

    package func run() async throws {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        let control = ConsumerControl()
        // Graceful shutdown drains; cancellation (another service in the group failed) stops too.
        await withTaskCancellationHandler {
            await consumeUntilStopped(thread: thread, control: control)
        } onCancel: {
            control.stop()
        }
        try? await thread.shutdownGracefully()
    }

    private func consumeUntilStopped(thread: NIOThreadPool, control: ConsumerControl) async {
        var backoff = Backoff()
        await withGracefulShutdownHandler {
            while !control.isStopping {
                do {
                    try await session(on: thread, control: control)
                    backoff.reset()
                } catch {
                    guard !control.isStopping else { break }
                    let delay = backoff.next()
                    logger.warning(
                        "consumer connection lost; reconnecting",
                        metadata: [
                            "queue": .string(queue), "error": .string("\(error)"), "retryIn": .stringConvertible(delay),
                        ])
                    try? await Task.sleep(for: delay)
                }
            }
        } onGracefulShutdown: {
            control.stop()
        }
    }

    /// One connection's life: returns when stopped, throws when the connection fails.
    private func session(on thread: NIOThreadPool, control: ConsumerControl) async throws {
        let (deliveries, sink) = AsyncStream.makeStream(of: IncomingMessage.self)
        let generation = control.beginSession()
        let (settings, queue, topology, prefetch, drainTimeout, logger) =
            (self.settings, self.queue, self.topology, self.prefetch, self.drainTimeout, self.logger)
        let handler = self.handler

        async let loop: Void = thread.runIfActive {
            defer { sink.finish() }
            try Self.blockingLoop(
                settings: settings, queue: queue, topology: topology, prefetch: prefetch,
                drainTimeout: drainTimeout, control: control, generation: generation, sink: sink, logger: logger)
        }
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await delivery in deliveries {
                if control.isStopping {
                    control.abandon()
                    continue
                }
                if running >= prefetch {
                    await group.next()
                    running -= 1
                }
                running += 1
                group.addTask {
                    let outcome = await handler(delivery)
                    control.settle(delivery.deliveryTag, outcome: outcome, generation: generation)
                }
            }
        }
        try await loop
    }

    private static func blockingLoop(
        settings: AMQPSettings, queue: String, topology: QueueTopology, prefetch: Int, drainTimeout: Duration,
        control: ConsumerControl, generation: Int, sink: AsyncStream<IncomingMessage>.Continuation, logger: Logger
    ) throws {
        let connection = try AMQPConnection(settings: settings)
        let wake = try WakePipe()
        control.attach(wake)
        defer { control.detach() }
        do {
            try connection.declare(topology)
            try connection.startConsuming(queue: queue, prefetch: prefetch, consumerTag: settings.connectionName)
            logger.info("consuming", metadata: ["queue": .string(queue), "prefetch": .stringConvertible(prefetch)])
            var drainDeadline: ContinuousClock.Instant?
            while true {
                for settlement in control.takeSettlements(generation: generation) {
                    switch settlement.outcome {
                    case .ack: try connection.ack(settlement.tag)
                    case .retry: try connection.nack(settlement.tag, requeue: true)
                    case .reject: try connection.nack(settlement.tag, requeue: false)
                    }
                }
                if control.isStopping {
                    // Take nothing new; wait for running handlers, then close so that the
                    // prefetched deliveries nobody started go back to the queue.
                    let deadline = drainDeadline ?? ContinuousClock.now + drainTimeout
                    drainDeadline = deadline
                    if control.outstanding == 0 || ContinuousClock.now >= deadline { return }
                    Thread.sleep(forTimeInterval: 0.01)
                    continue
                }
                // Acks are sent from this loop, so it must not sleep through a finished handler:
                // it waits on the socket and on the wake pipe, which every settlement writes to.
                // (With the prefetch window full the broker sends nothing until an ack goes out.)
                if !connection.hasBufferedInput {
                    wake.wait(alongside: connection.socketDescriptor, timeout: .milliseconds(20))
                }
                // Without a timeout this only takes what is there (and keeps heartbeats going).
                if let delivery = try connection.nextDelivery(timeout: .zero) {
                    control.received()
                    sink.yield(delivery)
                }
            }
        } catch {
            connection.abandon()
            throw error
        }
    }
}

/// State shared between the consumer's thread and its async side.
private final class ConsumerControl: Sendable {
    struct Settlement {
        let tag: UInt64
        let outcome: DeliveryOutcome
        let generation: Int
    }

    private struct State {
        var stopping = false
        var generation = 0
        var outstanding = 0
        var settlements: [Settlement] = []
        var wake: WakePipe?
    }

    private let state = Mutex(State())

    var isStopping: Bool { state.withLock { $0.stopping } }
    var outstanding: Int { state.withLock { $0.outstanding } }

    func stop() {
        state.withLock {
            $0.stopping = true
            $0.wake?.signal()
        }
    }

    /// The consumer thread's wake pipe, signalled (under the lock, so never after `detach`
    /// closed it) whenever there is something for the thread to send.
    func attach(_ wake: WakePipe) { state.withLock { $0.wake = wake } }

    func detach() {
        state.withLock {
            $0.wake?.close()
            $0.wake = nil
        }
    }

    /// A new connection: tags of the old one are meaningless now, and its unacked deliveries
    /// are already back in the queue.
    func beginSession() -> Int {
        state.withLock {
            $0.generation += 1
            $0.outstanding = 0
            $0.settlements.removeAll()
            return $0.generation
        }
    }

    func received() { state.withLock { $0.outstanding += 1 } }

    func abandon() { state.withLock { $0.outstanding -= 1 } }

    func settle(_ tag: UInt64, outcome: DeliveryOutcome, generation: Int) {
        state.withLock {
            guard $0.generation == generation else { return }
            $0.settlements.append(Settlement(tag: tag, outcome: outcome, generation: generation))
            $0.wake?.signal()
        }
    }

    func takeSettlements(generation: Int) -> [Settlement] {
        state.withLock {
            let taken = $0.settlements.filter { $0.generation == generation }
            $0.settlements.removeAll()
            $0.outstanding -= taken.count
            return taken
        }
    }
}

/// A pipe the consumer's thread waits on next to its socket, so another thread can end the
/// wait at once. Its descriptors are only touched under ``ConsumerControl``'s lock or by the
/// thread that owns it, until ``close()``.
final class WakePipe: @unchecked Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw AMQPError.library("cannot create a wake pipe", during: "consume") }
        (readEnd, writeEnd) = (ends[0], ends[1])
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
    }

    /// Ends a current or the next wait. A full pipe is already signalled enough.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits until `descriptor` is readable, the pipe is signalled, or `timeout` passes; then
    /// empties the pipe.
    func wait(alongside descriptor: Int32, timeout: Duration) {
        var watched = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
        ]
        let millis = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        _ = poll(&watched, 2, millis)
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    func close() {
        _ = Glibc.close(readEnd)
        _ = Glibc.close(writeEnd)
    }
}

/// Exponential back-off with full jitter, capped.
package struct Backoff: Sendable {
    private var attempt = 0
    private let base: Duration
    private let cap: Duration

    package init(base: Duration = .milliseconds(200), cap: Duration = .seconds(10)) {
        self.base = base
        self.cap = cap
    }

    package mutating func next() -> Duration {
        let ceiling = min(cap, base * (1 << min(attempt, 16)))
        attempt += 1
        let millis = Double(ceiling.components.seconds) * 1000 + Double(ceiling.components.attoseconds) / 1e15
        return .milliseconds(Int.random(in: Int(millis / 2)...max(Int(millis / 2), Int(millis))))
    }

    package mutating func reset() { attempt = 0 }
}
