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
/// connection lives on a dedicated thread, which is also where the async handlers run (up to
/// `prefetch` at once, interleaved at their suspension points), so reading, handling and
/// acking a delivery takes no thread hop. A handler must therefore not block: CPU-heavy or
/// blocking work (image processing, file I/O) belongs on its own thread pool, awaited.
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
    private let consuming = AtomicFlag()
    private let counts = ConsumerCounts()

    /// Whether a connection is consuming right now (for `/ready`: no probe connection needed).
    package var isConsuming: Bool { consuming.isSet }
    /// Connections that got as far as consuming, since the start (1 while none was lost).
    package var sessions: Int { counts.sessions.count }
    /// Turns of the connection thread's loop, each after a wait on its socket and wake pipe:
    /// while nothing arrives it turns once every half heartbeat interval, not every few
    /// milliseconds.
    package var turns: Int { counts.turns.count }

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
                    defer { consuming.set(false) }
                    try await session(on: thread, control: control)
                } catch {
                    guard !control.isStopping else { break }
                    // A connection that got as far as consuming was a healthy one: start over.
                    if control.takeConsumed() { backoff.reset() }
                    let delay = backoff.next()
                    logger.warning(
                        "consumer connection lost; reconnecting",
                        metadata: [
                            "queue": .string(queue), "error": .string("\(error)"), "retryIn": .stringConvertible(delay),
                        ])
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
                }
            }
        } onGracefulShutdown: {
            control.stop()
        }
    }

    /// One connection's life: returns when stopped, throws when the connection fails.
    ///
    /// The connection's thread is also the task executor of this session's handlers (see
    /// ``ConsumerControl``), so a delivery is read, handled and acked on one thread without a
    /// wake-up of another; a handler that awaits I/O suspends and resumes there too.
    private func session(on thread: NIOThreadPool, control: ConsumerControl) async throws {
        // Deliveries cross in bursts: one resumption of the loop below for whatever arrived together.
        let (bursts, sink) = AsyncStream.makeStream(of: [IncomingMessage].self)
        let generation = control.beginSession()
        let (settings, queue, topology, prefetch, drainTimeout, logger) =
            (self.settings, self.queue, self.topology, self.prefetch, self.drainTimeout, self.logger)
        let handler = self.handler
        let (consuming, counts) = (self.consuming, self.counts)

        // Started outside the executor preference: this task waits for the thread, it must not wait on it.
        async let loop: Void = thread.runIfActive {
            defer { sink.finish() }
            try control.serve {
                try Self.blockingLoop(
                    settings: settings, queue: queue, topology: topology, prefetch: prefetch,
                    drainTimeout: drainTimeout, control: control, generation: generation, sink: sink, logger: logger,
                    consuming: consuming, counts: counts)
            }
        }
        await withTaskExecutorPreference(control) {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await burst in bursts {
                    for delivery in burst {
                        if control.isStopping {
                            control.abandon(1)
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
            }
        }
        try await loop
    }

    private static func blockingLoop(
        settings: AMQPSettings, queue: String, topology: QueueTopology, prefetch: Int, drainTimeout: Duration,
        control: ConsumerControl, generation: Int, sink: AsyncStream<[IncomingMessage]>.Continuation, logger: Logger,
        consuming: AtomicFlag, counts: ConsumerCounts
    ) throws {
        let connection = try AMQPConnection(settings: settings)
        do {
            try connection.declare(topology)
            try connection.startConsuming(queue: queue, prefetch: prefetch, consumerTag: settings.connectionName)
            control.consumed()
            consuming.set(true)
            counts.sessions.add()
            logger.info("consuming", metadata: ["queue": .string(queue), "prefetch": .stringConvertible(prefetch)])
            var drainDeadline: ContinuousClock.Instant?
            // Nothing but heartbeats needs the loop while no frame arrives and nothing is
            // signalled: rabbitmq-c sends ours (and notices the broker's missing) only when
            // called, and the broker closes a connection silent for two intervals. The interval
            // is the one agreed at login, which the broker may have lowered; without heartbeats
            // the loop still turns once a minute.
            let agreed = connection.heartbeatSeconds
            let idleWait = agreed > 0 ? Duration.seconds(agreed) / 2 : .seconds(60)
            while true {
                counts.turns.add()
                control.runJobs(limit: 4 * prefetch)
                for settlement in control.takeSettlements(generation: generation) {
                    switch settlement.outcome {
                    case .ack: try connection.ack(settlement.tag)
                    case .retry: try connection.nack(settlement.tag, requeue: true)
                    case .reject: try connection.nack(settlement.tag, requeue: false)
                    }
                }
                if control.isStopping {
                    // Take nothing new; let running handlers finish (they run here), then close so
                    // that the prefetched deliveries nobody started go back to the queue.
                    let deadline = drainDeadline ?? ContinuousClock.now + drainTimeout
                    drainDeadline = deadline
                    if control.outstanding == 0 || ContinuousClock.now >= deadline { return }
                    control.waitForWork(alongside: nil, timeout: .milliseconds(10))
                    continue
                }
                // Acks are sent from this loop, so it must not sleep through a finished handler:
                // it waits on the socket and on the wake pipe, which new jobs, settlements and a
                // stop write to while it waits. (With the prefetch window full the broker sends
                // nothing until an ack goes out.)
                if !connection.hasBufferedInput {
                    control.waitForWork(alongside: connection.socketDescriptor, timeout: idleWait)
                }
                // Without a timeout this only takes what is there (and keeps heartbeats going).
                var burst: [IncomingMessage] = []
                while burst.count < prefetch, let delivery = try connection.nextDelivery(timeout: .zero) {
                    burst.append(delivery)
                }
                if !burst.isEmpty {
                    control.received(burst.count)
                    // A cancelled session's stream takes nothing more: nobody will settle these.
                    if case .terminated = sink.yield(burst) { control.abandon(burst.count) }
                }
            }
        } catch {
            connection.abandon()
            throw error
        }
    }
}

/// What a consumer counts (its tests read them).
private final class ConsumerCounts: Sendable {
    let sessions = AtomicCount()
    let turns = AtomicCount()
}

/// State shared between the consumer's thread and its async side, and the task executor of the
/// consumer's handlers: while a connection's thread serves it, jobs run on that thread (which
/// waits on its socket and a wake pipe, so a new job ends the wait); between connections they
/// go to the global concurrent executor, so a handler never waits for a thread that is gone.
private final class ConsumerControl: TaskExecutor, Sendable {
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
        var consumed = false
        var jobs: [UnownedJob] = []
        /// The wake pipe of the thread serving as executor, if one does.
        var wake: WakePipe?
        /// That thread waits (or is about to wait) on the pipe.
        var waiting = false

        /// A busy thread finds new work on its next turn; only a waiting one needs the pipe.
        mutating func wakeIfWaiting() {
            guard waiting else { return }
            waiting = false
            wake?.signal()
        }
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

    /// Runs `body` on the calling thread as this executor's thread, then hands jobs still
    /// queued (and any later ones) to the global executor.
    func serve(_ body: () throws -> Void) throws {
        let wake = try WakePipe()
        state.withLock { $0.wake = wake }
        defer {
            let orphans = state.withLock { state in
                state.wake?.close()
                state.wake = nil
                state.waiting = false
                defer { state.jobs.removeAll() }
                return state.jobs
            }
            for job in orphans { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        }
        try body()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let served = state.withLock {
            guard $0.wake != nil else { return false }
            $0.jobs.append(job)
            $0.wakeIfWaiting()
            return true
        }
        if !served { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Runs queued jobs on the serving thread, including those they enqueue, up to `limit`.
    func runJobs(limit: Int) {
        var ran = 0
        while ran < limit {
            let batch = state.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return state.jobs
            }
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            ran += batch.count
        }
    }

    /// Waits until `descriptor` is readable, work arrives, or `timeout` passes; returns at once
    /// when there is already work (a job, a settlement, a stop).
    func waitForWork(alongside descriptor: Int32?, timeout: Duration) {
        let wake: WakePipe? = state.withLock {
            guard $0.jobs.isEmpty, $0.settlements.isEmpty, !$0.stopping || descriptor == nil else { return nil }
            $0.waiting = true
            return $0.wake
        }
        guard let wake else { return }
        wake.wait(alongside: descriptor, timeout: timeout)
        state.withLock { $0.waiting = false }
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

    func received(_ count: Int) { state.withLock { $0.outstanding += count } }

    func abandon(_ count: Int) { state.withLock { $0.outstanding -= count } }

    /// The current connection started consuming.
    func consumed() { state.withLock { $0.consumed = true } }

    /// Whether a connection started consuming since the last call.
    func takeConsumed() -> Bool {
        state.withLock { state in
            defer { state.consumed = false }
            return state.consumed
        }
    }

    func settle(_ tag: UInt64, outcome: DeliveryOutcome, generation: Int) {
        state.withLock {
            guard $0.generation == generation else { return }
            $0.settlements.append(Settlement(tag: tag, outcome: outcome, generation: generation))
            $0.wakeIfWaiting()
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
/// thread that serves, until ``close()``.
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

    /// Waits until `descriptor` (if any) is readable, the pipe is signalled, or `timeout`
    /// passes; then empties the pipe.
    func wait(alongside descriptor: Int32?, timeout: Duration) {
        var watched = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        if let descriptor { watched.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        let millis = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        _ = poll(&watched, nfds_t(watched.count), millis)
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    func close() {
        _ = Glibc.close(readEnd)
        _ = Glibc.close(writeEnd)
    }
}
