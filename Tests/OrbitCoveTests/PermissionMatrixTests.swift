import OrbitCoveModels
import Testing

/// The seed's permission matrix, row by row: every action for an admin, a member and a
/// non-member, with the settings and creator rules that make some rows conditional.
@Suite struct PermissionMatrixTests {
    enum Who: CaseIterable { case admin, member, nonMember }

    /// (action, admin, member): a non-member may do nothing.
    static let matrix: [(CommunityAction, Bool, Bool)] = [
        (.viewContent, true, true),
        (.createEvent, true, true),  // with allowMemberEvents on (the default)
        (.editOwnEvent, true, true),
        (.editAnyEvent, true, false),
        (.createPost, true, true),  // with allowMemberPosts on (the default)
        (.createAnnouncement, true, false),
        (.pinPost, true, false),
        (.editOwnPost, true, true),
        (.editAnyPost, true, false),
        (.addExpense, true, true),
        (.setUpDues, true, false),
        (.markDuesPaid, true, false),
        (.exportLedger, true, false),
        (.inviteMembers, true, false),
        (.removeMembers, true, false),
        (.changeMemberRoles, true, false),
        (.editSettings, true, false),
        (.viewAuditLog, true, false),
        (.deleteCommunity, true, false),  // the creator, while an admin
        (.restoreCommunity, true, false),
        (.manageSubscription, true, false),  // the creator, while an admin
        (.createReminder, true, true),  // the dog-care seed: any member
        (.editReminder, true, true),
        (.markReminder, true, true),
    ]

    static func membership(_ who: Who) -> Membership? {
        switch who {
        case .admin: Membership(role: .admin, isCreator: true, creatorIsAdmin: true)
        case .member: Membership(role: .member, isCreator: false, creatorIsAdmin: true)
        case .nonMember: nil
        }
    }

    @Test func everyActionIsInTheTable() {
        #expect(Set(Self.matrix.map(\.0)) == Set(CommunityAction.allCases))
        #expect(Self.matrix.count == CommunityAction.allCases.count)
    }

    @Test(arguments: Self.matrix.map(\.0))
    func theMatrixHolds(_ action: CommunityAction) throws {
        let row = try #require(Self.matrix.first { $0.0 == action })
        let expected: [Who: Bool] = [.admin: row.1, .member: row.2, .nonMember: false]
        for who in Who.allCases {
            let allowed = CommunityPermissions.allows(action, for: Self.membership(who), settings: .default)
            #expect(allowed == expected[who], "\(action) for \(who)")
        }
    }

    @Test func memberContentCreationFollowsTheSettings() {
        var settings = CommunitySettings.default
        settings.allowMemberEvents = false
        settings.allowMemberPosts = false
        let member = Self.membership(.member)
        let admin = Self.membership(.admin)
        #expect(!CommunityPermissions.allows(.createEvent, for: member, settings: settings))
        #expect(!CommunityPermissions.allows(.createPost, for: member, settings: settings))
        #expect(CommunityPermissions.allows(.createEvent, for: admin, settings: settings))
        #expect(CommunityPermissions.allows(.createPost, for: admin, settings: settings))
        settings.allowMemberPosts = true
        #expect(CommunityPermissions.allows(.createPost, for: member, settings: settings))
        #expect(!CommunityPermissions.allows(.createEvent, for: member, settings: settings))
    }

    @Test func deletingAndBillingBelongToTheCreatorWhileTheyAreAdmin() {
        let otherAdmin = Membership(role: .admin, isCreator: false, creatorIsAdmin: true)
        #expect(!CommunityPermissions.allows(.deleteCommunity, for: otherAdmin, settings: .default))
        #expect(!CommunityPermissions.allows(.manageSubscription, for: otherAdmin, settings: .default))
        #expect(CommunityPermissions.allows(.editSettings, for: otherAdmin, settings: .default))
        // Once the creator is gone (or no longer an admin), any admin may.
        let orphaned = Membership(role: .admin, isCreator: false, creatorIsAdmin: false)
        #expect(CommunityPermissions.allows(.deleteCommunity, for: orphaned, settings: .default))
        #expect(CommunityPermissions.allows(.manageSubscription, for: orphaned, settings: .default))
        let demotedCreator = Membership(role: .member, isCreator: true, creatorIsAdmin: false)
        #expect(!CommunityPermissions.allows(.deleteCommunity, for: demotedCreator, settings: .default))
    }
}
