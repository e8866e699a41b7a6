import Logging
import Metrics
import Synchronization

/// Stops calling a dependency that keeps failing, for a while, so every request does not pay
/// its timeout; then lets one call through to see whether it is back.
///
/// Closed: calls go through; `threshold` failures in a row open it. Open: calls are refused at
/// once until `cooldown` has passed. Then one call at a time is let through (half-open): a
/// success closes the breaker, a failure opens it for another cooldown.
package final class CircuitBreaker: Sendable {
    package enum State: Sendable, Equatable {
        case closed
        case open
        case halfOpen
    }

    private struct Inner {
        var consecutiveFailures = 0
        var openUntil: ContinuousClock.Instant?
        /// When the half-open call started: one that never settles (it hangs) stops counting
        /// after a cooldown, and another call may probe.
        var probingSince: ContinuousClock.Instant?
    }

    private let name: String
    private let threshold: Int
    private let cooldown: Duration
    private let inner = Mutex(Inner())
    private let openGauge: Gauge
    private let opened: Counter
    private let logger: Logger

    package init(name: String, threshold: Int = 3, cooldown: Duration = .seconds(2)) {
        self.logger = Logger(label: "orbitcove.circuit.\(name)")
        self.name = name
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
        self.openGauge = Gauge(label: "orbitcove_circuit_open", dimensions: [("dependency", name)])
        self.opened = Counter(label: "orbitcove_circuit_opened_total", dimensions: [("dependency", name)])
        openGauge.record(0)
    }

    package var state: State {
        inner.withLock { inner in
            guard let until = inner.openUntil else { return .closed }
            return ContinuousClock.now < until ? .open : .halfOpen
        }
    }

    /// Whether a call may go ahead now. A `true` must be followed by ``succeeded()``,
    /// ``failed()`` or ``abandoned()``, so a half-open probe is always settled.
    package func allowsCall() -> Bool {
        inner.withLock { inner in
            guard let until = inner.openUntil else { return true }
            let now = ContinuousClock.now
            guard now >= until else { return false }
            if let since = inner.probingSince, now - since < cooldown { return false }
            inner.probingSince = now
            return true
        }
    }

    package func succeeded() {
        let closed = inner.withLock { inner in
            defer { inner = Inner() }
            return inner.openUntil != nil
        }
        if closed {
            openGauge.record(0)
            logger.notice("dependency answers again; circuit closed", metadata: ["dependency": .string(name)])
        }
    }

    /// The call ended without learning anything (its caller was cancelled before the
    /// dependency answered): a half-open probe makes way for the next call, and the breaker
    /// stays as it was.
    package func abandoned() {
        inner.withLock { $0.probingSince = nil }
    }

    package func failed() {
        let opening = inner.withLock { inner in
            inner.consecutiveFailures += 1
            let wasOpen = inner.openUntil != nil
            guard inner.probingSince != nil || inner.consecutiveFailures >= threshold else { return false }
            inner.probingSince = nil
            inner.openUntil = ContinuousClock.now + cooldown
            return !wasOpen
        }
        if opening {
            opened.increment()
            openGauge.record(1)
            logger.warning(
                "dependency failing; circuit open, calls skipped for a while",
                metadata: ["dependency": .string(name), "cooldown": .stringConvertible(cooldown)])
        }
    }
}
