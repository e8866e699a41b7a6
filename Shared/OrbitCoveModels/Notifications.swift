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

/// A member's notification settings for one community (`members.notification_prefs`), with
/// every default filled in: what `GET`/`PATCH …/members/me/notification-preferences` return.
package struct NotificationPreferences: Codable, Sendable, Equatable {
    /// Pushes to the member's devices at all; history rows are written either way.
    package var push: Bool
    /// Every switchable category, on or off (off: no history row and no push).
    package var categories: [String: Bool]
    /// Series (event ids) whose news the member does not want.
    package var mutedEvents: [UUID]
    @ExplicitNull package var quietHours: QuietHours?
    /// The member's own event reminder lead times, minutes before an event's start (none is an
    /// empty list); null follows the community's `defaultReminderHours`.
    @ExplicitNull package var eventReminderMinutes: [Int]?

    package init(
        push: Bool, categories: [String: Bool], mutedEvents: [UUID], quietHours: QuietHours?,
        eventReminderMinutes: [Int]? = nil
    ) {
        self.push = push
        self.categories = categories
        self.mutedEvents = mutedEvents
        self.quietHours = quietHours
        self.eventReminderMinutes = eventReminderMinutes
    }

    /// Everything on, nothing muted, no quiet hours: a member who never chose.
    package static let defaults = NotificationPreferences(
        push: true,
        categories: Dictionary(uniqueKeysWithValues: NotificationCategory.switchable.map { ($0.rawValue, true) }),
        mutedEvents: [], quietHours: nil)

    /// Reads what is stored, any part of it missing (the seed's `{}` at first): defaults fill in.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = Self.defaults
        push = try container.decodeIfPresent(Bool.self, forKey: .push) ?? defaults.push
        categories = defaults.categories.merging(
            try container.decodeIfPresent([String: Bool].self, forKey: .categories) ?? [:]
        ) { _, chosen in chosen }
        .filter { defaults.categories[$0.key] != nil }
        mutedEvents = try container.decodeIfPresent([UUID].self, forKey: .mutedEvents) ?? []
        quietHours = try container.decodeIfPresent(QuietHours.self, forKey: .quietHours)
        eventReminderMinutes = try container.decodeIfPresent([Int].self, forKey: .eventReminderMinutes)
    }

    private enum CodingKeys: String, CodingKey {
        case push, categories, mutedEvents, quietHours, eventReminderMinutes
    }
}

/// Hours in the member's own zone when pushes wait (history rows do not); `breakThrough`
/// lists the urgent categories that still push at once.
package struct QuietHours: Codable, Sendable, Equatable {
    /// `HH:MM`, 24-hour; `end` before `start` spans midnight.
    package var start: String
    package var end: String
    /// An IANA zone.
    package var timeZone: String
    package var breakThrough: [NotificationCategory]

    package init(start: String, end: String, timeZone: String, breakThrough: [NotificationCategory]) {
        self.start = start
        self.end = end
        self.timeZone = timeZone
        self.breakThrough = breakThrough
    }
}

/// APNs environments a device token belongs to.
package enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case sandbox
    case production
}

/// A registered device: where a user's pushes go.
package struct Device: Codable, Sendable, Equatable {
    package var token: String
    package var environment: PushEnvironment
    package var bundleId: String
    @ExplicitNull package var locale: String?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        token: String, environment: PushEnvironment, bundleId: String, locale: String?, createdAt: Date,
        updatedAt: Date
    ) {
        self.token = token
        self.environment = environment
        self.bundleId = bundleId
        self.locale = locale
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `GET /me/notifications/unread-count`.
package struct UnreadCount: Codable, Sendable, Equatable {
    package var count: Int

    package init(count: Int) { self.count = count }
}

/// `POST /me/notifications/read-all`: how many were marked.
package struct MarkedRead: Codable, Sendable, Equatable {
    package var marked: Int

    package init(marked: Int) { self.marked = marked }
}

/// Pushes to send for these history rows (the notifications service queues it to itself,
/// once the rows are committed and their pushes are due).
package struct PushDue: MessagePayload, Equatable {
    package static let messageType = "notification.push_due"
    package static let messageVersion = 1

    package var notificationIds: [UUID]

    package init(notificationIds: [UUID]) { self.notificationIds = notificationIds }
}
