import Foundation

/// A member as the community's other members see them.
package struct CommunityMember: Codable, Sendable, Equatable {
    package var userId: UUID
    package var displayName: String
    @ExplicitNull package var avatarUrl: String?
    @ExplicitNull package var nickname: String?
    package var role: MemberRole
    package var isCreator: Bool
    package var joinedAt: Date

    package init(
        userId: UUID, displayName: String, avatarUrl: String?, nickname: String?, role: MemberRole, isCreator: Bool,
        joinedAt: Date
    ) {
        self.userId = userId
        self.displayName = displayName
        self.avatarUrl = avatarUrl
        self.nickname = nickname
        self.role = role
        self.isCreator = isCreator
        self.joinedAt = joinedAt
    }
}

/// A managed profile for a child or dependant, who never signs in.
package struct FamilyMember: Codable, Sendable, Equatable {
    package var id: UUID
    package var name: String
    @ExplicitNull package var avatarUrl: String?
    package var createdAt: Date

    package init(id: UUID, name: String, avatarUrl: String?, createdAt: Date) {
        self.id = id
        self.name = name
        self.avatarUrl = avatarUrl
        self.createdAt = createdAt
    }
}

/// One entry of a community's audit log, for its admins.
package struct AuditEntry: Codable, Sendable, Equatable {
    package var id: UUID
    package var action: String
    package var actorId: UUID
    @ExplicitNull package var targetType: String?
    @ExplicitNull package var targetId: UUID?
    package var metadata: [String: JSONValue]
    package var createdAt: Date

    package init(
        id: UUID, action: String, actorId: UUID, targetType: String?, targetId: UUID?, metadata: [String: JSONValue],
        createdAt: Date
    ) {
        self.id = id
        self.action = action
        self.actorId = actorId
        self.targetType = targetType
        self.targetId = targetId
        self.metadata = metadata
        self.createdAt = createdAt
    }
}
