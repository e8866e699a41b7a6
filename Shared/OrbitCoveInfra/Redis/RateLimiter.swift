import Crypto
import Foundation
import HTTPTypes
import Logging

/// A budget: `limit` requests per `period`, which may all come at once (burst = limit).
package struct RateLimit: Sendable {
    package let name: String
    package let limit: Int
    package let period: Duration

    package init(name: String, limit: Int, period: Duration) {
        self.name = name
        self.limit = limit
        self.period = period
    }

    var intervalMilliseconds: Int64 { max(1, period.milliseconds / Int64(limit)) }
}

/// Rate limiting with the generic cell rate algorithm in Redis: one key per budget and
/// client holds the theoretical arrival time, updated atomically by a Lua script that reads
/// the clock from Redis, so every replica shares one budget. When Redis is unreachable the
/// limiter lets requests through (and says so in the log): abuse protection must not become
/// an outage.
package struct RateLimiter: Sendable {
    package struct Decision: Sendable, Equatable {
        package var allowed: Bool
        package var limit: Int
        package var remaining: Int
        package var retryAfter: Duration
        package var reset: Duration

        package init(allowed: Bool, limit: Int, remaining: Int, retryAfter: Duration, reset: Duration) {
            self.allowed = allowed
            self.limit = limit
            self.remaining = remaining
            self.retryAfter = retryAfter
            self.reset = reset
        }
    }

    static let script = RedisScript(
        """
        local interval = tonumber(ARGV[1])
        local burst = tonumber(ARGV[2])
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local tat = tonumber(redis.call('GET', KEYS[1])) or now
        if tat < now then tat = now end
        local newTat = tat + interval
        local allowAt = newTat - burst * interval
        if now < allowAt then
            return {0, 0, allowAt - now, tat - now}
        end
        redis.call('SET', KEYS[1], string.format('%d', newTat), 'PX', newTat - now)
        return {1, math.floor((now - allowAt) / interval), 0, newTat - now}
        """)

    private let redis: RedisClient
    private let logger: Logger

    package init(redis: RedisClient, logger: Logger) {
        self.redis = redis
        self.logger = logger
    }

    /// Spends one request of `limit` for `client` (an IP address, an account id, ...).
    package func check(_ limit: RateLimit, client: String) async -> Decision {
        let digest = SHA256.hash(data: Data(client.utf8)).prefix(12).lowerHex
        do {
            let reply = try await redis.evaluate(
                Self.script, keys: ["ratelimit:\(limit.name):\(digest)"],
                arguments: [String(limit.intervalMilliseconds), String(limit.limit)])
            guard case .array(let values) = reply, values.count == 4,
                let allowed = values[0].integer, let remaining = values[1].integer,
                let retryAfter = values[2].integer, let reset = values[3].integer
            else {
                throw RedisError(message: "unexpected rate limit reply \(reply)")
            }
            return Decision(
                allowed: allowed == 1, limit: limit.limit, remaining: remaining,
                retryAfter: .milliseconds(retryAfter), reset: .milliseconds(reset))
        } catch {
            // While the circuit is open every request lands here: the breaker said so once.
            let level: Logger.Level = (error as? RedisError)?.isCircuitOpen == true ? .debug : .warning
            logger.log(
                level: level, "rate limiter unavailable; letting the request through",
                metadata: ["limit": .string(limit.name), "error": .string("\(error)")])
            return Decision(allowed: true, limit: limit.limit, remaining: limit.limit, retryAfter: .zero, reset: .zero)
        }
    }

    /// Like ``check(_:client:)``, but throws `429 RATE_LIMITED` when the budget is spent.
    package func enforce(_ limit: RateLimit, client: String) async throws(APIError) {
        let decision = await check(limit, client: client)
        guard !decision.allowed else { return }
        throw APIError.rateLimited(decision)
    }
}

extension APIError {
    /// `429` with `Retry-After` and the IETF draft `RateLimit-*` headers, in whole seconds.
    package static func rateLimited(_ decision: RateLimiter.Decision) -> APIError {
        func seconds(_ duration: Duration) -> String {
            let (whole, fraction) = duration.components
            return String(max(1, whole + (fraction > 0 ? 1 : 0)))
        }
        var headers = HTTPFields()
        headers[.retryAfter] = seconds(decision.retryAfter)
        headers[.rateLimitLimit] = String(decision.limit)
        headers[.rateLimitRemaining] = String(decision.remaining)
        headers[.rateLimitReset] = seconds(decision.reset)
        return APIError(
            .tooManyRequests, code: "RATE_LIMITED", message: "Too many requests; try again later",
            details: ["retryAfterSeconds": .number(Double(seconds(decision.retryAfter)) ?? 1)], headers: headers)
    }
}

// swift-format-ignore: NeverForceUnwrap
// The names are valid header tokens, so the failable initialiser cannot fail.
extension HTTPField.Name {
    package static let rateLimitLimit = Self("RateLimit-Limit")!
    package static let rateLimitRemaining = Self("RateLimit-Remaining")!
    package static let rateLimitReset = Self("RateLimit-Reset")!
}
