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
}
