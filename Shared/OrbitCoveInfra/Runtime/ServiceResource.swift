import NIOCore
import NIOPosix
import Synchronization

/// Something a service makes when it runs and closes when it stops (its threads, an HTTP
/// client), so that nothing starts in `init`: a service that is built and never run (a test
/// that reads its router, a start-up that fails further on) leaves nothing behind.
///
/// Callers may come at any time. Before the service runs they wait for it (until their
/// deadline, if they have one, or until their task is cancelled), since a service group
/// starts its services concurrently and a request may arrive before a dependency's `run()`
/// has begun. After it stopped they get ``ServiceNotRunning`` at once: nothing hangs.
package final class ServiceResource<Resource: Sendable>: Sendable {
    private enum Phase {
        case notStarted
        /// `serve` has claimed the start and is making the resource: callers wait.
        case starting
        case running(Resource)
        case stopped
    }

    private struct State {
        var phase = Phase.notStarted
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Resource, any Error>] = [:]

        /// What a caller gets at once: the resource, or the refusal of a stopped service.
        func ready(_ name: String) -> Result<Resource, any Error>? {
            switch phase {
            case .notStarted, .starting: nil
            case .running(let resource): .success(resource)
            case .stopped: .failure(ServiceNotRunning(name, stopped: true))
            }
        }
    }

    package let name: String
    private let state = Mutex(State())

    package init(_ name: String) {
        self.name = name
    }

    /// The resource while its service runs; before that, waits for the start (until
    /// `deadline`, if given, then throws ``ServiceNotRunning``).
    package func running(deadline: ContinuousClock.Instant? = nil) async throws -> Resource {
        let (ready, waiter): (Result<Resource, any Error>?, Int) = state.withLock { state in
            if let ready = state.ready(name) { return (ready, 0) }
            state.nextWaiter += 1
            return (nil, state.nextWaiter)
        }
        if let ready { return try ready.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Resource, any Error>? = state.withLock { state in
                    if let ready = state.ready(name) { return ready }
                    // Cancellation sets the flag before its handler runs, and the handler takes
                    // this lock: either it finds the waiter, or the waiter sees the flag here.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[waiter] = continuation
                    return nil
                }
                if let ready {
                    continuation.resume(with: ready)
                } else if let deadline {
                    let wait = TimeAmount(ContinuousClock.now.duration(to: deadline))
                    MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: wait) {
                        self.release(waiter, with: ServiceNotRunning(self.name, stopped: false))
                    }
                }
            }
        } onCancel: {
            release(waiter, with: CancellationError())
        }
    }

    /// For the service's `run()`: makes the resource, hands it to the callers waiting for it,
    /// runs `body` (the service's life, until graceful shutdown), then refuses new callers and
    /// closes it. Runs once: a second call throws.
    package func serve(
        make: () throws -> Resource, close: (Resource) async throws -> Void,
        while body: (Resource) async throws -> Void
    ) async throws {
        let claimed = state.withLock { state in
            guard case .notStarted = state.phase else { return false }
            state.phase = .starting
            return true
        }
        guard claimed else { throw ServiceNotRunning(name, stopped: true) }
        let resource: Resource
        do {
            resource = try make()
        } catch {
            stop(failingWaitersWith: error)
            throw error
        }
        let waiters = state.withLock { state in
            state.phase = .running(resource)
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: resource) }
        do {
            try await body(resource)
        } catch {
            stop(failingWaitersWith: ServiceNotRunning(name, stopped: true))
            try? await close(resource)
            throw error
        }
        stop(failingWaitersWith: ServiceNotRunning(name, stopped: true))
        try await close(resource)
    }

    private func stop(failingWaitersWith error: any Error) {
        let waiters = state.withLock { state in
            state.phase = .stopped
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    private func release(_ waiter: Int, with error: any Error) {
        state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume(throwing: error)
    }
}

extension ServiceResource where Resource == NIOThreadPool {
    /// For the service's `run()`: `count` threads of its own while `body` runs. On the way out,
    /// work already running finishes, work still queued is refused, and the threads are joined.
    package func serveThreads(_ count: Int, while body: () async throws -> Void) async throws {
        try await serve(
            make: {
                let pool = NIOThreadPool(numberOfThreads: max(1, count))
                pool.start()
                return pool
            },
            close: { try await $0.shutdownGracefully() },
            while: { _ in try await body() })
    }

    /// Runs `work` on one of the threads and waits for it (for the threads' start too, if they
    /// have not started yet, until `deadline` if given); throws ``ServiceNotRunning`` once they
    /// have stopped.
    package func run<Result: Sendable>(
        deadline: ContinuousClock.Instant? = nil, _ work: @escaping @Sendable () throws -> Result
    ) async throws -> Result {
        let pool = try await running(deadline: deadline)
        do {
            return try await pool.runIfActive(work)
        } catch is CancellationError where !Task.isCancelled {
            throw ServiceNotRunning(name, stopped: true)  // The pool refused it: it is shutting down.
        }
    }
}
