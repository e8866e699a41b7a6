import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// What every sign-in and refresh returns: a token pair and the user.
package struct SessionResponse: Codable, Sendable {
    package var accessToken: String
    package var tokenType = "Bearer"
    package var expiresIn = Int(TokenIssuer.accessTokenLifetime)
    package var refreshToken: String
    package var refreshTokenExpiresIn = Int(RefreshTokens.lifetime)
    package var user: User
}

/// Sign-ins, refreshes and logouts: each one transaction over users, refresh tokens and the
/// audit log, then a signed access token.
package struct Sessions: Sendable {
    let database: Database
    let users: AuthUserStore
    let refreshTokens: RefreshTokens
    let issuer: TokenIssuer
    let logger: Logger

    package init(database: Database, issuer: TokenIssuer, logger: Logger) {
        self.database = database
        self.users = AuthUserStore(logger: logger)
        self.refreshTokens = RefreshTokens(successorKey: issuer.keys.successorKey, logger: logger)
        self.issuer = issuer
        self.logger = logger
    }

    /// Creates or updates the user behind `appleId` and starts a new session family.
    func signIn(
        appleId: String, email: String?, displayName: String?, deviceName: String?, method: String,
        ipAddress: String
    ) async throws -> SessionResponse {
        let (user, refreshToken) = try await database.transaction(scope: .system) { connection in
            let user = try await users.upsert(
                appleId: appleId, email: email, displayName: displayName, on: connection)
            let refresh = try await refreshTokens.issue(
                userId: user.id, familyId: .random(), deviceName: deviceName, on: connection)
            try await AuditLog.record(
                "auth.sign_in", userId: user.id, metadata: ["method": .string(method)], ipAddress: ipAddress,
                on: connection, logger: logger)
            return (user, refresh.token)
        }
        return SessionResponse(
            accessToken: try await issuer.accessToken(for: user.id), refreshToken: refreshToken, user: user)
    }

    static let reusedToken = APIError.unauthenticated(
        "REFRESH_TOKEN_REUSED", "This refresh token was already used; sign in again")

    /// Spends `presented` for a new pair. A reuse revokes the family (committed) and answers 401.
    func refresh(_ presented: String, ipAddress: String) async throws -> SessionResponse {
        let outcome: (RefreshTokens.Rotation, User?) = try await database.transaction(scope: .system) { connection in
            let rotation = try await refreshTokens.rotate(presented, on: connection)
            switch rotation {
            case .rotated(let userId, _, _):
                return (rotation, try await users.find(userId, on: connection))
            case .reused(let userId, let familyId):
                try await recordReuse(userId, familyId, ipAddress: ipAddress, on: connection)
                return (rotation, nil)
            case .unknown, .expired, .revoked:
                return (rotation, nil)
            }
        }
        switch outcome {
        case (.rotated(_, _, let token), let user?):
            return SessionResponse(
                accessToken: try await issuer.accessToken(for: user.id), refreshToken: token, user: user)
        case (.rotated, nil):
            throw APIError.unauthenticated("REFRESH_TOKEN_INVALID", "The account no longer exists")
        case (.reused(let userId, let familyId), _):
            throw reuseRefused(userId, familyId)
        case (.expired, _):
            throw APIError.unauthenticated("REFRESH_TOKEN_EXPIRED", "The refresh token has expired; sign in again")
        case (.revoked, _):
            throw APIError.unauthenticated("REFRESH_TOKEN_REVOKED", "The session has ended; sign in again")
        case (.unknown, _):
            throw APIError.unauthenticated("REFRESH_TOKEN_INVALID", "The refresh token is not valid")
        }
    }

    /// Ends the presented token's session, or with `everywhere` every session of its user.
    /// Logging out of an already ended session succeeds; an unknown token is a 401.
    /// A token spent past the reuse grace is a stolen one here as at refresh: its family is
    /// revoked (committed) and the logout refused, so it cannot end the user's other sessions.
    func logout(_ presented: String, everywhere: Bool, ipAddress: String) async throws {
        let reused = try await database.transaction(scope: .system) { connection -> (UUID, UUID)? in
            guard let owner = try await refreshTokens.owner(of: presented, on: connection) else {
                guard try await refreshTokens.isKnown(presented, on: connection) else {
                    throw APIError.unauthenticated("REFRESH_TOKEN_INVALID", "The refresh token is not valid")
                }
                return nil
            }
            if owner.spent {
                try await refreshTokens.revokeFamily(owner.familyId, reason: "reuse", on: connection)
                try await recordReuse(owner.userId, owner.familyId, ipAddress: ipAddress, on: connection)
                return (owner.userId, owner.familyId)
            } else if everywhere {
                let families = try await refreshTokens.revokeAll(
                    userId: owner.userId, reason: "logout_all", on: connection)
                try await AuditLog.record(
                    "auth.logout_all", userId: owner.userId, metadata: ["sessions": .number(Double(families))],
                    ipAddress: ipAddress, on: connection, logger: logger)
            } else {
                try await refreshTokens.revokeFamily(owner.familyId, reason: "logout", on: connection)
                try await AuditLog.record(
                    "auth.logout", userId: owner.userId, targetType: "refresh_token_family",
                    targetId: owner.familyId, ipAddress: ipAddress, on: connection, logger: logger)
            }
            return nil
        }
        if let (userId, familyId) = reused { throw reuseRefused(userId, familyId) }
    }

    /// A spent token presented again: the audit entry, in the transaction that revoked its family.
    private func recordReuse(
        _ userId: UUID, _ familyId: UUID, ipAddress: String, on connection: PostgresConnection
    ) async throws {
        try await AuditLog.record(
            "auth.refresh_token_reused", userId: userId, targetType: "refresh_token_family",
            targetId: familyId, ipAddress: ipAddress, on: connection, logger: logger)
    }

    /// The warning and the refusal, once the revocation has committed.
    private func reuseRefused(_ userId: UUID, _ familyId: UUID) -> APIError {
        logger.warning(
            "refresh token reused; session family revoked",
            metadata: ["userId": .string(userId.lowercasedString), "familyId": .string(familyId.lowercasedString)])
        return Self.reusedToken
    }
}
