import OrbitCoveInfra
import Testing

/// The half-open breaker lets one call probe at a time; a probe whose caller went away
/// (``CircuitBreaker/abandoned()``) neither closes nor reopens it, and lets the next call probe.
@Suite struct CircuitBreakerTests {
    @Test func anAbandonedProbeMakesWayForTheNextWithoutClosingTheBreaker() async throws {
        let breaker = CircuitBreaker(name: "test-abandoned", threshold: 1, cooldown: .milliseconds(500))
        breaker.failed()
        #expect(breaker.state == .open && !breaker.allowsCall())
        try await Task.sleep(for: .milliseconds(600))
        #expect(breaker.allowsCall())  // the probe
        #expect(!breaker.allowsCall())  // one at a time
        breaker.abandoned()
        #expect(breaker.state == .halfOpen)
        #expect(breaker.allowsCall())  // the next probe
        breaker.succeeded()
        #expect(breaker.state == .closed && breaker.allowsCall())
    }
}
