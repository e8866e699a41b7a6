import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `POST /api/v1/auth/dev`: sign in by email and name, for local development and demos.
/// Registered only when `ORBITCOVE_AUTH_DEV_LOGIN` is on; otherwise the route does not exist.
struct DevSignInRoutes {
    let users: AuthUserStore
    let issuer: TokenIssuer

    struct SignInRequest: Decodable {
        var email: String
        var displayName: String
    }

    struct SignInResponse: Encodable, Sendable {
        var accessToken: String
        var tokenType = "Bearer"
        var expiresIn = Int(TokenIssuer.accessTokenLifetime)
        var user: User
    }

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/auth/dev") { request, context in
            let body = try await request.decodeJSON(as: SignInRequest.self, context: context)
            let email = body.email.trimmingCharacters(in: .whitespaces).lowercased()
            let name = body.displayName.trimmingCharacters(in: .whitespacesAndNewlines)
            var problems: [String: String] = [:]
            if email.count > 255 || !Self.looksLikeEmail(email) { problems["email"] = "must be an email address" }
            if name.isEmpty || name.count > 100 { problems["displayName"] = "must be 1 to 100 characters" }
            guard problems.isEmpty else { throw APIError.validation(problems) }
            let user = try await users.upsert(appleId: "dev:\(email)", email: email, displayName: name)
            let token = try await issuer.accessToken(for: user.id)
            context.logger.info("development sign-in", metadata: ["userId": .string(user.id.uuidString.lowercased())])
            return try Response.data(SignInResponse(accessToken: token, user: user), requestId: context.requestId)
        }
    }

    static func looksLikeEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !text.contains(" ")
    }
}
