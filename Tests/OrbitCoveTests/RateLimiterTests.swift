import Foundation
import OrbitCoveInfra
import Testing

/// GCRA in Redis: a burst of `limit`, then one request per `period / limit`.
@Suite struct RateLimiterTests {
    func withLimiter(
        url: URL = TestEnvironment.redisURL, _ body: @Sendable (RateLimiter) async throws -> Void
    ) async throws {
        let redis = try RedisClient(
            url: url, connections: 2, timeout: TestEnvironment.redisTimeout, logger: TestEnvironment.logger)
        try await withServices([redis]) {
            try await body(RateLimiter(redis: redis, logger: TestEnvironment.logger))
        }
    }

    @Test func allowsABurstThenRefusesWithTheTimeUntilTheNextSlot() async throws {
        let limit = RateLimit(name: "test-\(UUID().uuidString.prefix(8))", limit: 3, period: .seconds(60))
        try await withLimiter { limiter in
            var remaining: [Int] = []
            for _ in 0..<3 {
                let decision = await limiter.check(limit, client: "alice")
                #expect(decision.allowed)
                remaining.append(decision.remaining)
            }
            #expect(remaining == [2, 1, 0])
            let refused = await limiter.check(limit, client: "alice")
            #expect(!refused.allowed)
            // One slot every 20 s: the next one is at most 20 s away, and a full budget 60 s.
            #expect(refused.retryAfter > .seconds(15) && refused.retryAfter <= .seconds(20))
            #expect(refused.reset > .seconds(55) && refused.reset <= .seconds(60))
            // Each client has a budget of its own.
            #expect(await limiter.check(limit, client: "bob").allowed)
            await #expect(throws: APIError.self) { try await limiter.enforce(limit, client: "alice") }
        }
    }

    @Test func budgetsRefillOverTime() async throws {
        let limit = RateLimit(name: "test-\(UUID().uuidString.prefix(8))", limit: 2, period: .seconds(8))
        try await withLimiter { limiter in
            #expect(await limiter.check(limit, client: "c").allowed)
            #expect(await limiter.check(limit, client: "c").allowed)
            #expect(await !limiter.check(limit, client: "c").allowed)
            // One slot comes back every 4 s (the three calls above take far less, even when the
            // whole suite loads the machine).
            try await Task.sleep(for: .milliseconds(4100))
            #expect(await limiter.check(limit, client: "c").allowed)
        }
    }

    /// Concurrent requests, pipelined on the same connections, spend the budget exactly: none
    /// is lost to a failed command (which would let it through) or counted twice.
    @Test func concurrentRequestsSpendTheBudgetExactly() async throws {
        let limit = RateLimit(name: "test-\(UUID().uuidString.prefix(8))", limit: 50, period: .seconds(600))
        try await withLimiter { limiter in
            let decisions = await withTaskGroup(of: RateLimiter.Decision.self) { group in
                for _ in 0..<200 { group.addTask { await limiter.check(limit, client: "crowd") } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let allowed = decisions.filter(\.allowed)
            #expect(allowed.count == 50)
            #expect(allowed.map(\.remaining).sorted() == Array(0..<50))
        }
    }

    @Test func withoutRedisRequestsGoThrough() async throws {
        let nowhere = try #require(URL(string: "redis://127.0.0.1:\(try freePort())/0"))
        let limit = RateLimit(name: "test-down", limit: 1, period: .seconds(60))
        try await withLimiter(url: nowhere) { limiter in
            #expect(await limiter.check(limit, client: "d").allowed)
            #expect(await limiter.check(limit, client: "d").allowed)
        }
    }

    @Test func theRefusalCarriesRetryAfterAndRateLimitHeaders() {
        let error = APIError.rateLimited(
            .init(allowed: false, limit: 5, remaining: 0, retryAfter: .milliseconds(1500), reset: .seconds(12)))
        #expect(error.status == .tooManyRequests && error.code == "RATE_LIMITED")
        #expect(error.headers[.retryAfter] == "2")
        #expect(error.headers[.rateLimitLimit] == "5")
        #expect(error.headers[.rateLimitRemaining] == "0")
        #expect(error.headers[.rateLimitReset] == "12")
    }
}
