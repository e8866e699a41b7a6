import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `POST /api/v1/auth/dev`: sign in by email and name, for local development and demos.
/// Registered only when `ORBITCOVE_AUTH_DEV_LOGIN` is on; otherwise the route does not exist.
package struct DevSignInRoutes {
    let sessions: Sessions
    let limiter: RateLimiter
    let limits: AuthRateLimits

    struct SignInRequest: Decodable {
        var email: String
        var displayName: String
        var deviceName: String?
    }

    package func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/auth/dev") { request, context in
            let client = context.clientAddress
            try await limiter.enforce(limits.signInPerIP, client: client)
            let body = try await request.decodeJSON(as: SignInRequest.self, context: context)
            // As sent: an address with spaces around it is not an email address.
            let email = body.email.lowercased()
            let name = body.displayName.withoutDirectionControls.trimmingCharacters(in: .whitespacesAndNewlines)
            var problems: [String: String] = [:]
            if email.databaseLength > 255 || email.unicodeScalars.contains("\u{0}") || !Self.looksLikeEmail(email) {
                problems["email"] = "must be an email address"
            }
            if name.isEmpty || name.databaseLength > 100 || name.unicodeScalars.contains("\u{0}") {
                problems["displayName"] = "must be 1 to 100 characters"
            } else if !name.isOneLine {
                problems["displayName"] = FieldReader.notOneLine
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

    /// An address as people write one: `local@domain`, nothing invisible or unprintable
    /// anywhere (a trailing newline or zero-width space made another account of the same
    /// address), no dot at either end of the local part or two in a row, and a domain of two
    /// or more labels of letters, digits and inner hyphens. Not RFC 5322's every form (quoted
    /// local parts, address literals): this is the development sign-in.
    package static func looksLikeEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty else { return false }
        let invisible = text.unicodeScalars.contains {
            switch $0.properties.generalCategory {
            case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .unassigned: true
            default: false
            }
        }
        guard !invisible, !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..") else { return false }
        guard !local.contains(where: { "<>()[]\\,;:\"".contains($0) }) else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                !label.isEmpty && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.allSatisfy { $0 == "-" || $0.isLetter || $0.isNumber }
            }
    }
}
