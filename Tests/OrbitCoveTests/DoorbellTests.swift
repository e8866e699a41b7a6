import OrbitCoveInfra
import Testing

/// ``Doorbell``: what idle loops wait on instead of looking every few milliseconds.
struct DoorbellTests {
    @Test func aRingEndsAWaitAtOnce() async throws {
        let bell = Doorbell()
        let started = ContinuousClock.now
        async let rang = bell.wait(until: started + .seconds(30))
        try await Task.sleep(for: .milliseconds(50))
        bell.ring()
        #expect(await rang)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aWaitNobodyRingsForEndsAtItsDeadline() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        #expect(await bell.wait(until: started + .milliseconds(100)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(100))
    }

    @Test func ringsWhileNobodyWaitsAreKeptAsOne() async {
        let bell = Doorbell()
        bell.ring()
        bell.ring()
        #expect(await bell.wait(until: .now + .seconds(30)))
        #expect(await bell.wait(until: .now + .milliseconds(50)) == false)
    }

    @Test func cancellingTheWaiterEndsItsWait() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        let waiter = Task { await bell.wait(until: started + .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(ContinuousClock.now - started < .seconds(10))
        // A ring after the cancelled wait is kept for the next one.
        bell.ring()
        #expect(await bell.wait(until: .now + .seconds(30)))
    }

    /// A ring from another thread at any moment of a wait (before it, while it stores its
    /// waiter, after) is never lost: each of many rounds ends by its ring, not its deadline.
    @Test func noRingIsLostAtAnyMomentOfAWait() async {
        let bell = Doorbell()
        var lost = 0
        for round in 0..<500 {
            async let rang = bell.wait(until: .now + .seconds(10))
            if round % 2 == 0 { await Task.yield() }
            let ringer = Task.detached { bell.ring() }
            await ringer.value
            if await !rang { lost += 1 }
        }
        #expect(lost == 0)
    }
}
