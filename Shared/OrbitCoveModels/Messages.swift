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
