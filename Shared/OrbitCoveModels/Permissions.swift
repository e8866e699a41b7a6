import Foundation

/// What a community member may do: the seed's permission matrix, in one place. Routes ask
/// ``CommunityPermissions/allows(_:for:settings:)``; tests check it as a table.
package enum CommunityAction: String, Sendable, CaseIterable {
    case viewContent
    case createEvent
    case editOwnEvent
    case editAnyEvent
    case createPost
    case createAnnouncement
    case pinPost
    case editOwnPost
    case editAnyPost
    case addExpense
    case setUpDues
    case markDuesPaid
    case exportLedger
    case inviteMembers
    case removeMembers
    case changeMemberRoles
    case editSettings
    case viewAuditLog
    case deleteCommunity
    case restoreCommunity
    case manageSubscription
    /// Shared care reminders (the dog-care seed): any member creates and edits one, and marks,
    /// snoozes or reassigns its occurrences.
    case createReminder
    case editReminder
    case markReminder
}

/// The facts about one user in one community that permissions depend on.
package struct Membership: Sendable, Equatable, Codable {
    package var role: MemberRole
    package var isCreator: Bool
    /// Whether the community's creator is still one of its admins: the seed reserves deleting
    /// the community and managing its subscription to the creator "initially", that is, for
    /// as long as the creator stays an admin.
    package var creatorIsAdmin: Bool

    package init(role: MemberRole, isCreator: Bool, creatorIsAdmin: Bool) {
        self.role = role
        self.isCreator = isCreator
        self.creatorIsAdmin = creatorIsAdmin
    }
}

package enum CommunityPermissions {
    /// Whether `membership` allows `action`; `nil` (not a member) allows nothing.
    package static func allows(
        _ action: CommunityAction, for membership: Membership?, settings: CommunitySettings
    )
        -> Bool
    {
        guard let membership else { return false }
        let isAdmin = membership.role == .admin
        switch action {
        case .viewContent, .editOwnEvent, .editOwnPost, .addExpense, .createReminder, .editReminder, .markReminder:
            return true
        case .createEvent:
            return isAdmin || settings.allowMemberEvents
        case .createPost:
            return isAdmin || settings.allowMemberPosts
        case .editAnyEvent, .createAnnouncement, .pinPost, .editAnyPost, .setUpDues, .markDuesPaid, .exportLedger,
            .inviteMembers,
            .removeMembers, .changeMemberRoles, .editSettings, .viewAuditLog, .restoreCommunity:
            return isAdmin
        case .deleteCommunity, .manageSubscription:
            return isAdmin && (membership.isCreator || !membership.creatorIsAdmin)
        }
    }
}

/// What may be done to one thing a member created, by the seed's row-level rules.
package enum ContentAction: String, Sendable, CaseIterable {
    case editEvent
    case deleteEvent
    case editPost
    case deletePost
    case editComment
    case deleteComment
    case editTransaction
    case deleteTransaction
    /// An uploaded photo or file (a community's; an avatar is only ever its owner's).
    case deleteMedia
    /// A shared care reminder: its creator or an admin deletes it.
    case deleteReminder
}

/// Who made a thing, and when: all the row-level rules look at.
package struct OwnedContent: Sendable, Equatable {
    package var createdBy: UUID
    package var createdAt: Date

    package init(createdBy: UUID, createdAt: Date) {
        self.createdBy = createdBy
        self.createdAt = createdAt
    }
}

extension CommunityPermissions {
    /// A member's own posts stay editable this long (the seed's `editable_until`).
    package static let postEditWindow: TimeInterval = 24 * 3600

    /// The seed's row-level rules: admins edit and delete anything; a member their own events,
    /// comments, ledger entries and uploads at any time, and their own posts for 24 hours after posting;
    /// nobody else's.
    package static func allows(
        _ action: ContentAction, on thing: OwnedContent, by userId: UUID, as membership: Membership?, now: Date
    ) -> Bool {
        guard let membership else { return false }
        if membership.role == .admin { return true }
        guard thing.createdBy == userId else { return false }
        switch action {
        case .editEvent, .deleteEvent, .editComment, .deleteComment, .editTransaction, .deleteTransaction, .deleteMedia,
            .deleteReminder:
            return true
        case .editPost, .deletePost: return now.timeIntervalSince(thing.createdAt) < postEditWindow
        }
    }
}
