import Foundation

/// A community was created; its creator is its first admin.
package struct CommunityCreated: MessagePayload, Equatable {
    package static let messageType = "community.created"
    package static let messageVersion = 1

    package var communityId: UUID
    package var name: String
    package var createdBy: UUID

    package init(communityId: UUID, name: String, createdBy: UUID) {
        self.communityId = communityId
        self.name = name
        self.createdBy = createdBy
    }
}

/// Someone joined a community (with an invite code).
package struct MemberJoined: MessagePayload, Equatable {
    package static let messageType = "member.joined"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var userId: UUID
    package var displayName: String

    package init(communityId: UUID, communityName: String, userId: UUID, displayName: String) {
        self.communityId = communityId
        self.communityName = communityName
        self.userId = userId
        self.displayName = displayName
    }
}

/// A member left a community of their own accord.
package struct MemberLeft: MessagePayload, Equatable {
    package static let messageType = "member.left"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var userId: UUID
    package var displayName: String

    package init(communityId: UUID, communityName: String, userId: UUID, displayName: String) {
        self.communityId = communityId
        self.communityName = communityName
        self.userId = userId
        self.displayName = displayName
    }
}

/// An admin removed a member.
package struct MemberRemoved: MessagePayload, Equatable {
    package static let messageType = "member.removed"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var userId: UUID
    package var removedBy: UUID

    package init(communityId: UUID, communityName: String, userId: UUID, removedBy: UUID) {
        self.communityId = communityId
        self.communityName = communityName
        self.userId = userId
        self.removedBy = removedBy
    }
}

/// An admin changed a member's role.
package struct MemberRoleChanged: MessagePayload, Equatable {
    package static let messageType = "member.role_changed"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var userId: UUID
    package var role: MemberRole
    package var changedBy: UUID

    package init(communityId: UUID, communityName: String, userId: UUID, role: MemberRole, changedBy: UUID) {
        self.communityId = communityId
        self.communityName = communityName
        self.userId = userId
        self.role = role
        self.changedBy = changedBy
    }
}

/// A community's name, description, icon or settings changed, or it was deleted or restored.
package struct CommunityUpdated: MessagePayload, Equatable {
    package static let messageType = "community.updated"
    package static let messageVersion = 1

    package var communityId: UUID
    package var name: String
    /// The fields that changed (`name`, `settings.timezone`, ...), or `deleted` / `restored`.
    package var changes: [String]
    package var updatedBy: UUID

    package init(communityId: UUID, name: String, changes: [String], updatedBy: UUID) {
        self.communityId = communityId
        self.name = name
        self.changes = changes
        self.updatedBy = updatedBy
    }
}
