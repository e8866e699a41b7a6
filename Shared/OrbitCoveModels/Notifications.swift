import Foundation

/// One entry of a user's notification history.
package struct NotificationRecord: Codable, Sendable, Equatable {
    package var id: UUID
    @ExplicitNull package var communityId: UUID?
    package var type: NotificationType
    package var title: String
    package var body: String
    package var data: [String: JSONValue]
    @ExplicitNull package var readAt: Date?
    package var createdAt: Date

    package init(
        id: UUID, communityId: UUID?, type: NotificationType, title: String, body: String,
        data: [String: JSONValue], readAt: Date?, createdAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.type = type
        self.title = title
        self.body = body
        self.data = data
        self.readAt = readAt
        self.createdAt = createdAt
    }
}
