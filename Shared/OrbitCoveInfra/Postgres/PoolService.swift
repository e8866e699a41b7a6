import PostgresNIO
import ServiceLifecycle
import Synchronization

extension Database {
    /// The pool as a part of a service group, in place of `client`. However the group stops it
    /// (graceful shutdown, in its turn after the parts that use it; or cancellation, every part
    /// at once; or both, as a test harness does), it first lets the calls in flight finish, for
    /// up to `drainTimeout`, then refuses new ones and stops the pool. PostgresNIO's pool, told
    /// to stop, closes its connections under the statements running on them, and a statement
    /// sent on a closed connection is never answered: a transaction's next statement or its
    /// `ROLLBACK` waited for ever, and with it the service's shutdown. The default outlasts
    /// `statement_timeout` (30 s): a statement already sent runs to its end whatever its
    /// task's cancellation says.
    package func service(drainTimeout: Duration = .seconds(35)) -> some Service {
        PoolService(client: client, inFlight: inFlight, drainTimeout: drainTimeout)
    }
}

private struct PoolService: Service {
    let client: PostgresClient
    let inFlight: InFlight
    let drainTimeout: Duration

    func run() async throws {
        // Detached: the pool hears neither this task's cancellation nor its graceful shutdown
        // (a task local, which `PostgresClient.run()` would obey at once), only `stop` below.
        let pool = Task.detached { await client.run() }
        let stop: @Sendable () -> Void = { [inFlight, drainTimeout] in
            Task {
                await inFlight.close(within: drainTimeout)
                pool.cancel()
            }
        }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await pool.value
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
    }
}

/// The calls using the pool, and whether it still takes new ones.
final class InFlight: Sendable {
    private struct State {
        var count = 0
        var closed = false
    }
    private let state = Mutex(State())

    /// Counts a call in; false once the pool is closing, when the call must not lease.
    func enter() -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.count += 1
            return true
        }
    }

    func leave() { state.withLock { $0.count -= 1 } }

    /// Returns once no call is in flight, or after `timeout`, refusing new calls from then
    /// on. Calls may begin while it waits (a cancelled relay releasing its claim).
    func close(within timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while true {
            let closed = state.withLock { state in
                if state.count == 0 || ContinuousClock.now >= deadline { state.closed = true }
                return state.closed
            }
            if closed { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
