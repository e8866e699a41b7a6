import Hummingbird

/// Per-user budgets on every authenticated request, one for reads (`GET`, `HEAD`) and one for
/// writes, so a client stuck in a write loop still gets to read. Anonymous requests pass:
/// the routes that allow them limit by client address themselves. Successful responses carry
/// the `RateLimit-*` headers of the budget they spent.
package struct UserRateLimitMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext
    let limiter: RateLimiter
    let reads: RateLimit
    let writes: RateLimit

    package init(limiter: RateLimiter, reads: RateLimit, writes: RateLimit) {
        self.limiter = limiter
        self.reads = reads
        self.writes = writes
    }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let userId = context.userId else { return try await next(request, context) }
        let budget = request.method == .get || request.method == .head ? reads : writes
        let decision = await limiter.check(budget, client: userId.uuidString)
        guard decision.allowed else { throw APIError.rateLimited(decision) }
        var response = try await next(request, context)
        response.headers[.rateLimitLimit] = String(decision.limit)
        response.headers[.rateLimitRemaining] = String(decision.remaining)
        response.headers[.rateLimitReset] = String(max(1, Int(decision.reset.components.seconds)))
        return response
    }
}
