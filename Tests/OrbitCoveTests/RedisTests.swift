import Foundation
import OrbitCoveInfra
import Synchronization
import Testing

@Suite struct RedisTests {
    let key = "test:\(UUID().uuidString)"

    func withRedis(_ body: @Sendable (RedisClient) async throws -> Void) async throws {
        let redis = try RedisClient(
            url: TestEnvironment.redisURL, connections: 2, timeout: TestEnvironment.redisTimeout,
            logger: TestEnvironment.logger)
        try await withServices([redis]) { try await body(redis) }
    }

    @Test func setGetExpireAndDelete() async throws {
        let key = self.key
        try await withRedis { redis in
            #expect(try await redis.get(key) == nil)
            try await redis.set(key, "value with spaces\nand a newline", expiresIn: 60)
            #expect(try await redis.get(key) == "value with spaces\nand a newline")
            let ttl = try await redis.command(["TTL", key]).integer ?? -1
            #expect((1...60).contains(ttl))
            #expect(try await redis.delete([key]) == 1)
            #expect(try await redis.get(key) == nil)
        }
    }

    @Test func scriptsAreLoadedAgainAfterAFlush() async throws {
        let key = self.key
        try await withRedis { redis in
            let script = RedisScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
            _ = try await redis.command(["SCRIPT", "FLUSH"])
            #expect(try await redis.evaluate(script, keys: [key], arguments: ["5"]).integer == 5)
            #expect(try await redis.evaluate(script, keys: [key], arguments: ["2"]).integer == 7)
            _ = try await redis.command(["SCRIPT", "FLUSH"])
            #expect(try await redis.evaluate(script, keys: [key], arguments: ["1"]).integer == 8)
            try await redis.delete([key])
        }
    }

    @Test func errorsFromRedisAreThrown() async throws {
        let key = self.key
        try await withRedis { redis in
            try await redis.set(key, "not a number", expiresIn: 60)
            await #expect(throws: RedisError.self) { try await redis.command(["INCR", key]) }
            try await redis.delete([key])
        }
    }

    @Test func publishedMessagesReachSubscribers() async throws {
        let channel = "test-channel-\(UUID().uuidString)"
        try await withRedis { redis in
            let received = Mutex<[String]>([])
            let listener = Task {
                for await event in redis.subscribe(to: [channel]) {
                    received.withLock { $0.append(event.message) }
                }
            }
            let subscribed = try await eventually {
                guard case .array(let parts) = try await redis.command(["PUBSUB", "NUMSUB", channel]) else {
                    return false
                }
                return parts.last?.integer == 1
            }
            #expect(subscribed)
            let receivers = try await redis.publish(channel: channel, message: "hello")
            #expect(receivers == 1)
            let arrived = try await eventually { received.withLock { $0 } == ["hello"] }
            #expect(arrived)
            listener.cancel()
        }
    }
}
