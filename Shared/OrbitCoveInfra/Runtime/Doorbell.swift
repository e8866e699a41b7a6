import Synchronization

/// Wakes one waiting task from any task or thread, without the waiter looking every few
/// milliseconds: a loop that has nothing to do until someone rings or a deadline passes waits
/// here and costs nothing meanwhile. A ring while nobody waits is kept (one, however often it
/// rang) for the next wait. One task waits at a time.
package final class Doorbell: Sendable {
    private struct State {
        var rung = false
        /// The current wait's number; a settled wait's timer or cancellation finds it changed.
        var wait = 0
        var waiter: CheckedContinuation<Bool, Never>?

        /// Ends wait `number` if it is still the current one; the waiter to resume, if stored.
        mutating func settle(_ number: Int) -> CheckedContinuation<Bool, Never>? {
            guard wait == number else { return nil }
            wait += 1
            defer { waiter = nil }
            return waiter
        }
    }

    private let state = Mutex(State())

    package init() {}

    package func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.waiter != nil else {
                state.rung = true
                return nil
            }
            return state.settle(state.wait)
        }
        waiter?.resume(returning: true)
    }

    /// Waits until the bell rings (true; the ring is used up) or `deadline` passes, or the task
    /// is cancelled (false).
    package func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        let number: Int? = state.withLock { state in
            if state.rung {
                state.rung = false
                return nil
            }
            state.wait += 1
            return state.wait
        }
        guard let number else { return true }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.end(number)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let settled: Bool? = state.withLock { state in
                    // The timer or a cancellation came first.
                    guard state.wait == number else { return false }
                    if state.rung {
                        state.rung = false
                        state.wait += 1
                        return true
                    }
                    // A second waiter would leave the first waiting for ever.
                    precondition(state.waiter == nil, "a doorbell has one waiter at a time")
                    state.waiter = continuation
                    return nil
                }
                if let settled { continuation.resume(returning: settled) }
            }
        } onCancel: {
            end(number)
        }
    }

    private func end(_ number: Int) {
        state.withLock { $0.settle(number) }?.resume(returning: false)
    }
}
