/// Enum types of the data model, with the database's spelling as raw values.
package enum MemberRole: String, Codable, Sendable, CaseIterable {
    case admin
    case member
}

package enum SubscriptionStatus: String, Codable, Sendable, CaseIterable {
    case free
    case active
    case pastDue = "past_due"
    case canceled
}

package enum NotificationType: String, Codable, Sendable, CaseIterable {
    case eventReminder = "event_reminder"
    case newPost = "new_post"
    case mention
    case rsvpRequest = "rsvp_request"
    case paymentRequest = "payment_request"
    case communityUpdate = "community_update"
    case eventCreated = "event_created"
    case eventChanged = "event_changed"
    case eventCancelled = "event_cancelled"
    case waitlistPromoted = "waitlist_promoted"
    case memberJoined = "member_joined"
    case memberLeft = "member_left"
    case memberRemoved = "member_removed"
    case roleChanged = "role_changed"
    case announcement
    case postComment = "post_comment"
    case expenseAdded = "expense_added"
    case settlementReceived = "settlement_received"
    case careReminder = "care_reminder"

    /// The preference switch that governs this kind of notification.
    package var category: NotificationCategory {
        switch self {
        case .eventCreated, .eventChanged, .eventCancelled: .events
        case .rsvpRequest: .rsvp
        case .memberJoined, .memberLeft: .members
        case .newPost, .postComment: .posts
        case .announcement: .announcements
        case .mention: .mentions
        case .paymentRequest, .expenseAdded, .settlementReceived: .payments
        case .eventReminder, .careReminder: .reminders
        case .waitlistPromoted, .memberRemoved, .roleChanged, .communityUpdate: .personal
        }
    }
}

/// What a member can switch on and off per community. `personal` news (your role, your
/// removal, your place off a waitlist, your community deleted) has no switch.
package enum NotificationCategory: String, Codable, Sendable, CaseIterable {
    case events
    case rsvp
    case members
    case posts
    case announcements
    case mentions
    case payments
    case reminders
    case personal

    /// The categories a member can turn off.
    package static let switchable = allCases.filter { $0 != .personal }
    /// The categories that may break through quiet hours, if the member says so.
    package static let urgent: [NotificationCategory] = [.announcements, .mentions]
}
