import Foundation
import HTTPTypes
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// The seed's deletion flows, carried out by core's retention jobs.
@Suite struct RetentionTests {
    @Test func anAccountIsAnonymisedWhenItsGracePeriodEndsAndItsCommunitiesKeepAnAdmin() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { api in
            let (ada, ben, cleo) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Cleo")
            )
            let shared = try await api.community(by: ada)
            try await api.join(ben, shared, invitedBy: ada)
            let alone = try await api.community(by: ada)
            try await api.call(.post, "/api/v1/me/family-members", as: ada, json: #"{"name":"Tommy"}"#)
            let before = try await api.call(.get, "/api/v1/communities/\(shared.id)/sync", as: ben)
                .data(CommunitySync.self).syncToken
            let feed = try await api.call(.post, "/api/v1/me/calendar-feeds", as: ada, json: "{}").data(
                CalendarFeed.self)
            // Her payment handles, where she is a member and where she was one, and a phone she
            // registered for pushes (a hostile probe's: both outlived the account, and Ben's
            // balances still offered her Venmo and PayPal links).
            let earlier = try await api.community(by: cleo)
            try await api.join(ada, earlier, invitedBy: cleo)
            for club in [shared, earlier] {
                let handles = try await api.call(
                    .patch, "/api/v1/communities/\(club.id)/members/me/payment-handles", as: ada,
                    json: #"{"venmo":"ada-venmo","paypal":"adapays"}"#)
                #expect(handles.status == .ok)
            }
            #expect(try await api.call(.post, "/api/v1/communities/\(earlier.id)/leave", as: ada).status == .noContent)
            _ = try await FinanceTests.expense(
                api, in: shared, by: ada, FinanceTests.equal(1_000, paidBy: ada, among: [ada, ben]))
            let owed = try await api.call(.get, "/api/v1/communities/\(shared.id)/balances/simplified", as: ben)
                .data([CurrencySettlement].self)
            #expect(owed.first?.transfers.first?.payLinks.paypal != nil)
            try await withTestDatabase { database in
                try await database.transaction(scope: .system) { connection in
                    try await connection.run(
                        """
                        INSERT INTO devices (token, user_id, environment, bundle_id)
                        VALUES (\(String(repeating: "ad", count: 32)), \(ada.id), 'sandbox', 'app.orbitcove')
                        """, logger: TestEnvironment.logger)
                }
            }
            #expect(try await api.call(.delete, "/api/v1/me", as: ada).status == .accepted)
            #expect(try await api.call(.delete, "/api/v1/me", as: cleo).status == .accepted)

            try await withTestDatabase { database in
                // Ada's grace period is over; Cleo's is not.
                try await database.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE users SET deletion_requested_at = NOW() - INTERVAL '8 days' WHERE id = \(ada.id)",
                        logger: TestEnvironment.logger)
                }
                #expect(
                    try await eventually {
                        try await count(
                            "SELECT count(*)::int FROM users WHERE id = \(ada.id) AND deleted_at IS NOT NULL",
                            in: database) == 1
                    })
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM users WHERE id = \(ada.id) AND display_name = '[Deleted User]' AND avatar_url IS NULL AND email LIKE 'deleted-%'",
                        in: database) == 1)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM members WHERE user_id = \(ada.id) AND left_at IS NULL", in: database)
                        == 0)
                #expect(
                    try await count("SELECT count(*)::int FROM family_members WHERE user_id = \(ada.id)", in: database)
                        == 0)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM members WHERE user_id = \(ada.id) AND payment_handles <> '{}'",
                        in: database) == 0)
                #expect(
                    try await count("SELECT count(*)::int FROM devices WHERE user_id = \(ada.id)", in: database) == 0)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM refresh_tokens WHERE user_id = \(ada.id) AND revoked_at IS NULL",
                        in: database) == 0)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM communities WHERE id = \(alone.id) AND deleted_at IS NOT NULL",
                        in: database) == 1)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM users WHERE id = \(cleo.id) AND deleted_at IS NULL", in: database)
                        == 1)
                // Announced as the same changes through the API are: Ada left both communities,
                // Ben became the admin of one, the other was deleted with nobody left in it.
                func announced(_ type: String, in community: UUID, about user: UUID? = nil) async throws -> Int {
                    try await count(
                        """
                        SELECT count(*)::int FROM outbox WHERE message_type = \(type) AND community_id = \(community)
                          AND actor_id = \(ada.id) AND (\(user == nil) OR data ->> 'userId' = \(user?.lowercasedString ?? ""))
                        """, in: database)
                }
                #expect(try await announced("member.left", in: shared.id, about: ada.id) == 1)
                #expect(try await announced("member.left", in: alone.id, about: ada.id) == 1)
                #expect(try await announced("member.role_changed", in: shared.id, about: ben.id) == 1)
                #expect(try await announced("community.updated", in: alone.id) == 1)
                #expect(try await announced("community.updated", in: shared.id) == 0)
                #expect(
                    try await count(
                        """
                        SELECT count(*)::int FROM outbox WHERE message_type = 'community.updated'
                          AND community_id = \(alone.id) AND data -> 'changes' ? 'deleted'
                        """, in: database) == 1)
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM audit_log WHERE user_id = \(ada.id) AND action = 'account.deleted'",
                        in: database) == 1)
            }
            // Ben's phone hears it through sync: Ada gone, Ben an admin.
            let changes = try await api.call(.get, "/api/v1/communities/\(shared.id)/sync?since=\(before)", as: ben)
                .data(CommunitySync.self)
            #expect(!changes.full && changes.members.deleted == [ada.id])
            #expect(changes.members.updated.map(\.userId) == [ben.id] && changes.members.updated.first?.role == .admin)
            // Ben inherits the community as its admin; Ada's token no longer finds an account.
            let community = try await api.call(.get, "/api/v1/communities/\(shared.id)", as: ben).data(Community.self)
            #expect(community.role == .admin && community.memberCount == 1)
            let audit = try await api.call(.get, "/api/v1/communities/\(shared.id)/audit", as: ben).page(
                AuditEntry.self)
            #expect(audit.items.prefix(2).map(\.action).sorted() == ["member.account_deleted", "member.role_changed"])
            // Her communities' routes say so too, not that the community is not there.
            for path in ["/api/v1/communities/\(shared.id)", "/api/v1/communities/\(shared.id)/members"] {
                let refused = try await api.call(.get, path, as: ada)
                #expect(refused.status == .unauthorized && refused.errorCode == "ACCOUNT_DELETED", "\(path)")
            }
            // Her token, unexpired, acts for nobody: she cannot join again, make a community, a
            // feed or a family member (a hostile probe's: all of these worked until it expired,
            // and a feed made so read the calendar for good).
            let invite = try await api.call(.post, "/api/v1/communities/\(shared.id)/invites", as: ben, json: "{}")
                .data(Invite.self)
            for (method, path, body) in [
                (HTTPRequest.Method.get, "/api/v1/me", nil), (.post, "/api/v1/invites/\(invite.code)/join", nil),
                (.get, "/api/v1/invites/\(invite.code)", nil),
                (.post, "/api/v1/communities", #"{"name":"Ghost"}"#), (.post, "/api/v1/me/calendar-feeds", "{}"),
                (.post, "/api/v1/me/family-members", #"{"name":"Kid"}"#), (.get, "/api/v1/me/communities", nil),
            ] {
                let refused = try await api.call(method, path, as: ada, json: body)
                #expect(refused.status == .unauthorized && refused.errorCode == "ACCOUNT_DELETED", "\(method) \(path)")
            }
            // Her feeds are revoked with the account.
            let feedURL = try #require(feed.url)
            let feedPath = try #require(URL(string: feedURL)).path
            #expect(try await api.call(.get, feedPath, as: nil).status == .notFound)
            let members = try await api.call(.get, "/api/v1/communities/\(shared.id)/members", as: ben).page(
                CommunityMember.self)
            #expect(members.items.map(\.userId) == [ben.id])
            // What Ben owes her stays, without a way to pay her that was hers.
            let settling = try await api.call(.get, "/api/v1/communities/\(shared.id)/balances/simplified", as: ben)
                .data([CurrencySettlement].self)
            let toAda = try #require(settling.first?.transfers.first { $0.to == ada.id })
            #expect(toAda.payLinks.venmo == nil && toAda.payLinks.paypal == nil)
        }
    }

    /// A token signed for an account that is not there (removed from the database, restored
    /// from a backup taken before it was made) acts for nobody, as a deleted account's does (a
    /// hostile probe's: some writes were `500`, the database refusing a row that named nobody).
    @Test func aTokenWhoseAccountIsNotThereActsForNobody() async throws {
        try await CoreHarness.run { api in
            let (ada, gone) = (try await api.signIn("Ada"), try await api.signIn("Gone"))
            let (club, other) = (try await api.community(by: ada), try await api.community(by: ada))
            try await api.join(gone, club, invitedBy: ada)
            let invite = try await api.call(.post, "/api/v1/communities/\(club.id)/invites", as: ada, json: "{}")
                .data(Invite.self)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { database in
                try await database.transaction(scope: .system) { connection in
                    let logger = TestEnvironment.logger
                    try await connection.run("DELETE FROM audit_log WHERE user_id = \(gone.id)", logger: logger)
                    try await connection.run("DELETE FROM users WHERE id = \(gone.id)", logger: logger)
                }
            }
            for (method, path, body) in [
                (HTTPRequest.Method.get, "/api/v1/me", nil), (.post, "/api/v1/invites/\(invite.code)/join", nil),
                (.get, "/api/v1/invites/\(invite.code)", nil),
                (.post, "/api/v1/communities", #"{"name":"Ghost"}"#), (.post, "/api/v1/me/calendar-feeds", "{}"),
                (.post, "/api/v1/me/family-members", #"{"name":"Kid"}"#), (.get, "/api/v1/me/communities", nil),
                (.get, "/api/v1/communities/\(other.id)", nil),
                (.post, "/api/v1/communities/\(club.id)/posts", #"{"content":"Boo"}"#),
            ] {
                let refused = try await api.call(method, path, as: gone, json: body)
                #expect(refused.status == .unauthorized && refused.errorCode == "ACCOUNT_DELETED", "\(method) \(path)")
            }
        }
    }

    @Test func deletedCommunitiesArePurgedAfterThirtyDays() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { api in
            let ada = try await api.signIn("Ada")
            let (old, recent) = (try await api.community(by: ada), try await api.community(by: ada))
            try await api.call(.delete, "/api/v1/communities/\(old.id)", as: ada)
            try await api.call(.delete, "/api/v1/communities/\(recent.id)", as: ada)
            try await withTestDatabase { database in
                try await database.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE communities SET deleted_at = NOW() - INTERVAL '31 days' WHERE id = \(old.id)",
                        logger: TestEnvironment.logger)
                }
                #expect(
                    try await eventually {
                        try await count("SELECT count(*)::int FROM communities WHERE id = \(old.id)", in: database) == 0
                    })
                #expect(
                    try await count("SELECT count(*)::int FROM change_log WHERE community_id = \(old.id)", in: database)
                        == 0)
                #expect(
                    try await count("SELECT count(*)::int FROM communities WHERE id = \(recent.id)", in: database) == 1)
            }
            #expect(try await api.call(.post, "/api/v1/communities/\(recent.id)/restore", as: ada).status == .ok)
        }
    }

    @Test func auditEntriesGoAfterTwoYears() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            try await api.call(.delete, "/api/v1/communities/\(club.id)", as: ada)
            try await api.call(.post, "/api/v1/communities/\(club.id)/restore", as: ada)
            // The log is append-only for the services, so its age is set as its owner.
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await owner.transaction(scope: .system) { connection in
                    try await connection.query(
                        """
                        UPDATE audit_log SET created_at = NOW() - INTERVAL '2 years 1 day'
                        WHERE community_id = \(club.id) AND action = 'community.deleted'
                        """, logger: TestEnvironment.logger)
                }
            }
            try await withTestDatabase { database in
                let pruned = try await eventually {
                    try await count(
                        "SELECT count(*)::int FROM audit_log WHERE community_id = \(club.id) AND action = 'community.deleted'",
                        in: database) == 0
                }
                let kept = try await count(
                    "SELECT count(*)::int FROM audit_log WHERE community_id = \(club.id) AND action = 'community.restored'",
                    in: database)
                #expect(pruned && kept == 1)
            }
        }
    }

    @Test func refreshTokensGoThirtyDaysAfterRevocationOrExpiry() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { api in
            let ada = try await api.signIn("Ada")
            let family = UUID()
            // (device name, expires in, revoked ago): an interval from now, or none.
            let tokens: [(String, String, String?)] = [
                ("revoked long ago", "20 days", "31 days"),
                ("expired long ago", "-31 days", nil),
                ("revoked recently", "20 days", "1 day"),
                ("expired recently", "-1 day", nil),
                ("live", "30 days", nil),
            ]
            try await withTestDatabase { database in
                try await database.transaction(scope: .system) { connection in
                    for (name, expiresIn, revokedAgo) in tokens {
                        try await connection.run(
                            """
                            INSERT INTO refresh_tokens (user_id, token_hash, device_name, expires_at, revoked_at, family_id)
                            VALUES (\(ada.id), \(UUID.random().uuidString), \(name), NOW() + \(expiresIn)::interval,
                                    NOW() - \(revokedAgo)::interval, \(family))
                            """, logger: TestEnvironment.logger)
                    }
                }
                #expect(
                    try await eventually {
                        try await count(
                            "SELECT count(*)::int FROM refresh_tokens WHERE family_id = \(family)", in: database) == 3
                    })
                let left = try await database.transaction(scope: .system) { connection in
                    var names: [String] = []
                    for try await name in try await connection.query(
                        "SELECT device_name FROM refresh_tokens WHERE family_id = \(family) ORDER BY device_name",
                        logger: TestEnvironment.logger
                    ).decode(String.self) {
                        names.append(name)
                    }
                    return names
                }
                #expect(left == ["expired recently", "live", "revoked recently"])
                // The token of Ada's sign-in a moment ago is untouched too.
                #expect(
                    try await count(
                        "SELECT count(*)::int FROM refresh_tokens WHERE user_id = \(ada.id) AND family_id <> \(family)",
                        in: database) == 1)
            }
        }
    }
}
