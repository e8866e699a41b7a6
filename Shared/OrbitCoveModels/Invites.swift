import Foundation

/// An invite code as its community's admins see it.
package struct Invite: Codable, Sendable, Equatable {
    package enum Status: String, Codable, Sendable {
        case active
        case expired
        case exhausted
        case revoked
    }

    package var id: UUID
    package var code: String
    package var createdBy: UUID
    @ExplicitNull package var maxUses: Int?
    package var useCount: Int
    @ExplicitNull package var expiresAt: Date?
    @ExplicitNull package var revokedAt: Date?
    package var status: Status
    package var createdAt: Date

    package init(
        id: UUID, code: String, createdBy: UUID, maxUses: Int?, useCount: Int, expiresAt: Date?, revokedAt: Date?,
        status: Status, createdAt: Date
    ) {
        self.id = id
        self.code = code
        self.createdBy = createdBy
        self.maxUses = maxUses
        self.useCount = useCount
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.status = status
        self.createdAt = createdAt
    }

    /// The state of a code at `now`; revocation wins over the other reasons.
    package static func status(revokedAt: Date?, expiresAt: Date?, maxUses: Int?, useCount: Int, now: Date) -> Status {
        if revokedAt != nil { return .revoked }
        if let expiresAt, expiresAt <= now { return .expired }
        if let maxUses, useCount >= maxUses { return .exhausted }
        return .active
    }
}

/// What someone holding only a code may learn before joining.
package struct InvitePreview: Codable, Sendable, Equatable {
    package var communityId: UUID
    package var name: String
    @ExplicitNull package var iconUrl: String?
    package var memberCount: Int
    @ExplicitNull package var expiresAt: Date?

    package init(communityId: UUID, name: String, iconUrl: String?, memberCount: Int, expiresAt: Date?) {
        self.communityId = communityId
        self.name = name
        self.iconUrl = iconUrl
        self.memberCount = memberCount
        self.expiresAt = expiresAt
    }
}
