/// Exponential back-off with full jitter, capped: how a reconnecting loop (the AMQP consumer,
/// the Redis subscriber) spaces its attempts.
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
