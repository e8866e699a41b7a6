import OrbitCoveInfra

/// Budgets for the endpoints worth guessing at: per client IP (one abuser) and per account
/// (many IPs, one victim).
package struct AuthRateLimits: Sendable {
    package var signInPerIP = RateLimit(name: "auth-signin-ip", limit: 20, period: .seconds(60))
    package var signInPerAccount = RateLimit(name: "auth-signin-account", limit: 10, period: .seconds(60))
    package var refreshPerIP = RateLimit(name: "auth-refresh-ip", limit: 60, period: .seconds(60))
    package var refreshPerToken = RateLimit(name: "auth-refresh-token", limit: 10, period: .seconds(60))
    package var logoutPerIP = RateLimit(name: "auth-logout-ip", limit: 30, period: .seconds(60))

    package init() {}
}
