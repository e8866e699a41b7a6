import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `POST /api/v1/auth/apple`, `POST /api/v1/auth/refresh`, `DELETE /api/v1/auth/logout`.
struct SessionRoutes {
    let sessions: Sessions
    let apple: AppleIdentityVerifier
    let limiter: RateLimiter
    let limits: AuthRateLimits

    struct AppleSignInRequest: Decodable {
        var identityToken: String
        var nonce: String
        var fullName: FullName?
        var deviceName: String?
    }

    /// Apple sends the name only on the first sign-in, as name components; a plain string works too.
    struct FullName: Decodable {
        var text: String?

        init(from decoder: any Decoder) throws {
            if let plain = try? decoder.singleValueContainer().decode(String.self) {
                text = plain
                return
            }
            let parts = try decoder.container(keyedBy: CodingKeys.self)
            let given = try parts.decodeIfPresent(String.self, forKey: .givenName)
            let family = try parts.decodeIfPresent(String.self, forKey: .familyName)
            text = [given, family].compactMap { $0 }.joined(separator: " ")
        }

        enum CodingKeys: String, CodingKey { case givenName, familyName }
    }

    struct RefreshRequest: Decodable {
        var refreshToken: String
    }

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/auth/apple") { request, context in
            let client = context.clientAddress
            try await limiter.enforce(limits.signInPerIP, client: client)
            let body = try await request.decodeJSON(as: AppleSignInRequest.self, context: context)
            let deviceName = try Self.validatedDeviceName(body.deviceName)
            let name = body.fullName?.text.map {
                $0.withoutDirectionControls.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard (name?.databaseLength ?? 0) <= 100, name?.unicodeScalars.contains("\u{0}") != true else {
                throw APIError.validation(["fullName": "at most 100 characters"])
            }
            guard name?.isOneLine != false else { throw APIError.validation(["fullName": FieldReader.notOneLine]) }
            let identity: AppleIdentity
            do {
                identity = try await apple.verify(body.identityToken, rawNonce: body.nonce)
            } catch let error as AppleIdentityError {
                context.logger.notice(
                    "Apple identity token refused", metadata: ["reason": .string("\(error)")])
                throw error.apiError
            }
            try await limiter.enforce(limits.signInPerAccount, client: "apple:\(identity.subject)")
            let session = try await sessions.signIn(
                appleId: identity.subject, email: identity.email?.lowercased(),
                displayName: name.flatMap { $0.isEmpty ? nil : $0 }, deviceName: deviceName, method: "apple",
                ipAddress: client)
            return try Response.data(session, requestId: context.requestId, headers: [.cacheControl: "no-store"])
        }

        router.post("/api/v1/auth/refresh") { request, context in
            let client = context.clientAddress
            try await limiter.enforce(limits.refreshPerIP, client: client)
            let body = try await request.decodeJSON(as: RefreshRequest.self, context: context)
            try await limiter.enforce(limits.refreshPerToken, client: RefreshTokens.hash(body.refreshToken))
            let session = try await sessions.refresh(body.refreshToken, ipAddress: client)
            return try Response.data(session, requestId: context.requestId, headers: [.cacheControl: "no-store"])
        }

        router.delete("/api/v1/auth/logout") { request, context in
            let client = context.clientAddress
            try await limiter.enforce(limits.logoutPerIP, client: client)
            let body = try await request.decodeJSON(as: RefreshRequest.self, context: context)
            let everywhere: Bool
            switch request.uri.queryParameters.get("all") {
            case nil, "false": everywhere = false
            case "true": everywhere = true
            default: throw APIError.validation(["all": "must be true or false"])
            }
            try await sessions.logout(body.refreshToken, everywhere: everywhere, ipAddress: client)
            return Response(status: .noContent)
        }
    }

    static func validatedDeviceName(_ raw: String?) throws -> String? {
        guard let name = raw?.withoutDirectionControls.trimmingCharacters(in: .whitespacesAndNewlines), !name.isEmpty
        else { return nil }
        guard name.databaseLength <= 100, !name.unicodeScalars.contains("\u{0}") else {
            throw APIError.validation(["deviceName": "at most 100 characters"])
        }
        guard name.isOneLine else { throw APIError.validation(["deviceName": FieldReader.notOneLine]) }
        return name
    }
}
