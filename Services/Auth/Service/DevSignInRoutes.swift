import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `POST /api/v1/auth/dev`: sign in by email and name, for local development and demos.
/// Registered only when `ORBITCOVE_AUTH_DEV_LOGIN` is on; otherwise the route does not exist.
struct DevSignInRoutes {
    let sessions: Sessions
    let limiter: RateLimiter
    let limits: AuthRateLimits

    struct SignInRequest: Decodable {
        var email: String
        var displayName: String
        var deviceName: String?
    }

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/auth/dev") { request, context in
            let client = context.clientAddress
            try await limiter.enforce(limits.signInPerIP, client: client)
            let body = try await request.decodeJSON(as: SignInRequest.self, context: context)
            // As sent: an address with spaces around it is not an email address.
            let email = body.email.lowercased()
            let name = body.displayName.trimmingCharacters(in: .whitespacesAndNewlines)
            var problems: [String: String] = [:]
            if email.databaseLength > 255 || email.unicodeScalars.contains("\u{0}") || !Self.looksLikeEmail(email) {
                problems["email"] = "must be an email address"
            }
            if name.isEmpty || name.databaseLength > 100 || name.unicodeScalars.contains("\u{0}") {
                problems["displayName"] = "must be 1 to 100 characters"
            }
            guard problems.isEmpty else { throw APIError.validation(problems) }
            let deviceName = try SessionRoutes.validatedDeviceName(body.deviceName)
            try await limiter.enforce(limits.signInPerAccount, client: "dev:\(email)")
            let session = try await sessions.signIn(
                appleId: "dev:\(email)", email: email, displayName: name, deviceName: deviceName, method: "dev",
                ipAddress: client)
            context.logger.info(
                "development sign-in", metadata: ["userId": .string(session.user.id.lowercasedString)])
            return try Response.data(session, requestId: context.requestId, headers: [.cacheControl: "no-store"])
        }
    }

    static func looksLikeEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !text.contains(" ")
    }
}
