import Foundation
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
            }
            // Ben inherits the community as its admin; Ada's token no longer finds an account.
            let community = try await api.call(.get, "/api/v1/communities/\(shared.id)", as: ben).data(Community.self)
            #expect(community.role == .admin && community.memberCount == 1)
            let audit = try await api.call(.get, "/api/v1/communities/\(shared.id)/audit", as: ben).page(
                AuditEntry.self)
            #expect(audit.items.prefix(2).map(\.action).sorted() == ["member.account_deleted", "member.role_changed"])
            #expect(try await api.call(.get, "/api/v1/me", as: ada).errorCode == "USER_NOT_FOUND")
            #expect(try await api.call(.get, "/api/v1/communities/\(shared.id)", as: ada).status == .notFound)
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
                        try await connection.query(
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
