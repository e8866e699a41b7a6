import Foundation
import OrbitCoveModels
import Testing

/// The matrix's row-level rules, as a table: what an admin, the thing's creator, another
/// member and a non-member may do to an event, a post or a comment, and when (posts: 24 hours).
@Suite struct ContentPermissionTests {
    enum Who: CaseIterable { case admin, creator, otherMember, nonMember }
    enum Age: CaseIterable { case fresh, dayOld }

    /// (action, age) → who may.
    static let table: [(ContentAction, Age, Set<Who>)] = [
        (.editEvent, .fresh, [.admin, .creator]),
        (.editEvent, .dayOld, [.admin, .creator]),
        (.deleteEvent, .fresh, [.admin, .creator]),
        (.deleteEvent, .dayOld, [.admin, .creator]),
        (.editPost, .fresh, [.admin, .creator]),
        (.editPost, .dayOld, [.admin]),
        (.deletePost, .fresh, [.admin, .creator]),
        (.deletePost, .dayOld, [.admin]),
        (.editComment, .fresh, [.admin, .creator]),
        (.editComment, .dayOld, [.admin, .creator]),
        (.deleteComment, .fresh, [.admin, .creator]),
        (.deleteComment, .dayOld, [.admin, .creator]),
        (.editTransaction, .fresh, [.admin, .creator]),
        (.editTransaction, .dayOld, [.admin, .creator]),
        (.deleteTransaction, .fresh, [.admin, .creator]),
        (.deleteTransaction, .dayOld, [.admin, .creator]),
        (.deleteMedia, .fresh, [.admin, .creator]),
        (.deleteMedia, .dayOld, [.admin, .creator]),
        (.deleteReminder, .fresh, [.admin, .creator]),
        (.deleteReminder, .dayOld, [.admin, .creator]),
    ]

    @Test func everyActionAndAgeIsInTheTable() {
        let rows = Set(Self.table.map { "\($0.0)-\($0.1)" })
        #expect(rows.count == Self.table.count)
        #expect(rows.count == ContentAction.allCases.count * Age.allCases.count)
    }

    @Test(arguments: Self.table.indices)
    func theRulesHold(_ index: Int) {
        let (action, age, allowed) = Self.table[index]
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let creator = UUID.random()
        let createdAt = age == .fresh ? now.addingTimeInterval(-3600) : now.addingTimeInterval(-24 * 3600 - 1)
        let thing = OwnedContent(createdBy: creator, createdAt: createdAt)
        for who in Who.allCases {
            let (userId, membership): (UUID, Membership?) =
                switch who {
                case .admin: (UUID.random(), Membership(role: .admin, isCreator: false, creatorIsAdmin: true))
                case .creator: (creator, Membership(role: .member, isCreator: false, creatorIsAdmin: true))
                case .otherMember: (UUID.random(), Membership(role: .member, isCreator: false, creatorIsAdmin: true))
                case .nonMember: (creator, nil)
                }
            let allows = CommunityPermissions.allows(action, on: thing, by: userId, as: membership, now: now)
            #expect(allows == allowed.contains(who), "\(action) \(age) by \(who)")
        }
    }

    /// The 24 hours are exact: a second before they end a post is still its author's to edit.
    @Test func thePostWindowEndsAfterTwentyFourHours() {
        let author = UUID.random()
        let member = Membership(role: .member, isCreator: false, creatorIsAdmin: true)
        let posted = Date(timeIntervalSince1970: 1_800_000_000)
        let post = OwnedContent(createdBy: author, createdAt: posted)
        #expect(CommunityPermissions.allows(.editPost, on: post, by: author, as: member, now: posted + 86_399))
        #expect(!CommunityPermissions.allows(.editPost, on: post, by: author, as: member, now: posted + 86_400))
    }
}
