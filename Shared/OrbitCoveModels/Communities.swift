import Foundation

/// Community-level settings, stored as JSONB. Absent keys take the defaults.
package struct CommunitySettings: Codable, Sendable, Equatable {
    package var allowMemberEvents: Bool
    package var allowMemberPosts: Bool
    package var defaultReminderHours: Int
    package var timezone: String
    /// The language the feed's search stems words in: a PostgreSQL text search configuration
    /// (``searchLanguages``); `simple` stems nothing and suits any language.
    package var searchLanguage: String
    /// Whether `GET …/balances/simplified` suggests the fewest transfers that settle everyone
    /// (on by default, as Splitwise has it) or each pair's own debt.
    package var simplifyDebts: Bool
    /// Members who have not answered an event that asks for answers are nudged this many hours
    /// before it starts (0: never).
    package var rsvpNudgeHours: Int
    /// When those who still owe dues are reminded, in days from the due date: negative before,
    /// positive overdue (TeamSnap's 1, 7, 14 and 30 days past due, and three days before).
    package var duesReminderDays: [Int]

    package static let `default` = CommunitySettings(
        allowMemberEvents: true, allowMemberPosts: true, defaultReminderHours: 24, timezone: "UTC",
        searchLanguage: "simple", simplifyDebts: true)

    /// The text search configurations PostgreSQL 15 ships (migration 0029 falls back to
    /// `simple` for any other name).
    package static let searchLanguages = [
        "simple", "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish", "french",
        "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali",
        "norwegian", "portuguese", "romanian", "russian", "serbian", "spanish", "swedish", "tamil", "turkish",
        "yiddish",
    ]

    package init(
        allowMemberEvents: Bool, allowMemberPosts: Bool, defaultReminderHours: Int, timezone: String,
        searchLanguage: String = "simple", simplifyDebts: Bool = true,
        rsvpNudgeHours: Int = ReminderDefaults.rsvpNudgeHours,
        duesReminderDays: [Int] = ReminderDefaults.duesReminderDays
    ) {
        self.allowMemberEvents = allowMemberEvents
        self.allowMemberPosts = allowMemberPosts
        self.defaultReminderHours = defaultReminderHours
        self.timezone = timezone
        self.searchLanguage = searchLanguage
        self.simplifyDebts = simplifyDebts
        self.rsvpNudgeHours = rsvpNudgeHours
        self.duesReminderDays = duesReminderDays
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let fallback = Self.default
        allowMemberEvents =
            try container.decodeIfPresent(Bool.self, forKey: .allowMemberEvents) ?? fallback.allowMemberEvents
        allowMemberPosts =
            try container.decodeIfPresent(Bool.self, forKey: .allowMemberPosts) ?? fallback.allowMemberPosts
        defaultReminderHours =
            try container.decodeIfPresent(Int.self, forKey: .defaultReminderHours) ?? fallback.defaultReminderHours
        timezone = try container.decodeIfPresent(String.self, forKey: .timezone) ?? fallback.timezone
        searchLanguage =
            try container.decodeIfPresent(String.self, forKey: .searchLanguage) ?? fallback.searchLanguage
        simplifyDebts = try container.decodeIfPresent(Bool.self, forKey: .simplifyDebts) ?? fallback.simplifyDebts
        rsvpNudgeHours = try container.decodeIfPresent(Int.self, forKey: .rsvpNudgeHours) ?? fallback.rsvpNudgeHours
        duesReminderDays =
            try container.decodeIfPresent([Int].self, forKey: .duesReminderDays) ?? fallback.duesReminderDays
    }
}

package struct Community: Codable, Sendable, Equatable {
    package var id: UUID
    package var name: String
    @ExplicitNull package var description: String?
    @ExplicitNull package var iconUrl: String?
    /// The icon's upload when it is one (`iconUrl` is then its address).
    @ExplicitNull package var iconMediaId: UUID?
    package var createdBy: UUID
    package var memberCount: Int
    package var subscriptionStatus: SubscriptionStatus
    package var settings: CommunitySettings
    /// The requesting user's role in this community.
    package var role: MemberRole
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, name: String, description: String?, iconUrl: String?, iconMediaId: UUID? = nil, createdBy: UUID,
        memberCount: Int, subscriptionStatus: SubscriptionStatus, settings: CommunitySettings, role: MemberRole,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.iconUrl = iconUrl
        self.iconMediaId = iconMediaId
        self.createdBy = createdBy
        self.memberCount = memberCount
        self.subscriptionStatus = subscriptionStatus
        self.settings = settings
        self.role = role
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
