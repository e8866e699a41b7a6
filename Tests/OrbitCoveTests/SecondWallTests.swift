import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Row-level security holds on its own: statements the application would never run, run as
/// the services' role in a user's context, are refused or see nothing.
@Suite struct SecondWallTests {
    /// What a statement did as `user`: the rows it returned, or that PostgreSQL refused it.
    enum Outcome: Equatable {
        case rows(Int)
        case refused
    }

    static func run(_ sql: PostgresQuery, as user: UUID?, in database: Database) async -> Outcome {
        do {
            return .rows(
                try await database.transaction(scope: user.map { .user($0) }) { connection in
                    try await connection.query(sql, logger: TestEnvironment.logger).collect().count
                })
        } catch {
            return .refused
        }
    }

    static func ids(_ sql: PostgresQuery, as user: UUID?, in database: Database) async throws -> Set<UUID> {
        try await database.transaction(scope: user.map { .user($0) }) { connection in
            var ids: Set<UUID> = []
            for try await id in try await connection.query(sql, logger: TestEnvironment.logger).decode(UUID.self) {
                ids.insert(id)
            }
            return ids
        }
    }

    @Test func aMemberCannotPromoteMoveOrReadmitThemself() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve")
            )
            let tigers = try await api.community(by: ada)
            let lions = try await api.community(by: eve)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                let promote: PostgresQuery =
                    "UPDATE members SET role = 'admin' WHERE user_id = \(ben.id) AND community_id = \(tigers.id) RETURNING 1"
                #expect(await Self.run(promote, as: ben.id, in: db) == .refused)
                let move: PostgresQuery =
                    "UPDATE members SET community_id = \(lions.id) WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(move, as: ben.id, in: db) == .refused)
                // Nor may a member make themselves newer than they are (and owe fewer dues).
                for column in ["joined_at", "first_joined_at"] {
                    let newer: PostgresQuery =
                        "UPDATE members SET \(unescaped: column) = NOW() + interval '1 day' WHERE user_id = \(ben.id) RETURNING 1"
                    #expect(await Self.run(newer, as: ben.id, in: db) == .refused, "\(column)")
                }
                let removeAda: PostgresQuery =
                    "UPDATE members SET left_at = NOW(), removed_by = \(ben.id) WHERE user_id = \(ada.id) RETURNING 1"
                #expect(await Self.run(removeAda, as: ben.id, in: db) == .rows(0))
                // The admin still manages roles.
                let adaPromotes: PostgresQuery = """
                    UPDATE members SET role = 'admin' WHERE user_id = \(ben.id) AND community_id = \(tigers.id)
                    RETURNING 1
                    """
                #expect(await Self.run(adaPromotes, as: ada.id, in: db) == .rows(1))
                // What a member may do to their own row still works: a nickname, leaving.
                let nickname: PostgresQuery =
                    "UPDATE members SET nickname = 'Benny' WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(nickname, as: ben.id, in: db) == .rows(1))
                let leave: PostgresQuery =
                    "UPDATE members SET left_at = NOW() WHERE user_id = \(ben.id) AND left_at IS NULL RETURNING 1"
                #expect(await Self.run(leave, as: ben.id, in: db) == .rows(1))
                // ... but not coming back without an invite.
                let comeBack: PostgresQuery = "UPDATE members SET left_at = NULL WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(comeBack, as: ben.id, in: db) == .refused)
            }
        }
    }

    @Test func usersSeeThemselvesAndFellowMembersOnly() async throws {
        try await CoreHarness.run { api in
            let (ada, ben, eve) = (
                try await api.signIn("Ada"), try await api.signIn("Ben"), try await api.signIn("Eve")
            )
            let tigers = try await api.community(by: ada)
            _ = try await api.community(by: eve)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                let everyone: PostgresQuery = "SELECT id FROM users WHERE id = ANY(\([ada.id, ben.id, eve.id]))"
                let (seenByBen, seenByEve) = (
                    try await Self.ids(everyone, as: ben.id, in: db), try await Self.ids(everyone, as: eve.id, in: db)
                )
                let seenByNobody = try await Self.ids(everyone, as: nil, in: db)
                #expect(seenByBen == [ada.id, ben.id])
                #expect(seenByEve == [eve.id])
                #expect(seenByNobody.isEmpty)
                let rename: PostgresQuery = "UPDATE users SET display_name = 'x' WHERE id = \(ada.id) RETURNING 1"
                #expect(await Self.run(rename, as: ben.id, in: db) == .rows(0))
                let undelete: PostgresQuery = "UPDATE users SET deleted_at = NOW() WHERE id = \(ben.id) RETURNING 1"
                #expect(await Self.run(undelete, as: ben.id, in: db) == .refused)
                let create: PostgresQuery =
                    "INSERT INTO users (apple_id, email, display_name) VALUES ('x:\(UUID())', '', 'x') RETURNING 1"
                #expect(await Self.run(create, as: ben.id, in: db) == .refused)
            }
        }
    }

    @Test func notificationsTokensAuditAndMessagesStayWithTheirOwners() async throws {
        try await CoreHarness.run { api in
            let (ada, eve) = (try await api.signIn("Ada"), try await api.signIn("Eve"))
            let tigers = try await api.community(by: ada)
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        """
                        INSERT INTO notifications (user_id, community_id, type, title, body)
                        VALUES (\(ada.id), \(tigers.id), 'community_update', 'hi', 'there')
                        """, logger: TestEnvironment.logger)
                }
                let notes: PostgresQuery = "SELECT id FROM notifications WHERE user_id = \(ada.id) AND title = 'hi'"
                #expect(try await Self.ids(notes, as: ada.id, in: db).count == 1)
                #expect(try await Self.ids(notes, as: eve.id, in: db).isEmpty)
                let forge: PostgresQuery = """
                    INSERT INTO notifications (user_id, type, title, body)
                    VALUES (\(ada.id), 'community_update', 'x', 'y') RETURNING 1
                    """
                #expect(await Self.run(forge, as: eve.id, in: db) == .refused)
                let markRead: PostgresQuery =
                    "UPDATE notifications SET read_at = NOW() WHERE user_id = \(ada.id) RETURNING 1"
                #expect(await Self.run(markRead, as: eve.id, in: db) == .rows(0))

                let tokens: PostgresQuery = "SELECT user_id FROM refresh_tokens"
                #expect(try await Self.ids(tokens, as: eve.id, in: db) == [eve.id])

                let forgedAudit: PostgresQuery = """
                    INSERT INTO audit_log (user_id, community_id, action) VALUES (\(ada.id), \(tigers.id), 'x') RETURNING 1
                    """
                #expect(await Self.run(forgedAudit, as: eve.id, in: db) == .refused)

                #expect(await Self.run("SELECT id FROM outbox", as: ada.id, in: db) == .rows(0))
                #expect(await Self.run("SELECT message_id FROM inbox", as: ada.id, in: db) == .rows(0))
                #expect(await Self.run("UPDATE outbox SET attempts = 0 RETURNING 1", as: ada.id, in: db) == .rows(0))
            }
        }
    }

    /// What a user writes beside their changes (a message for the notifications service, an
    /// audit entry) is for their own communities, and the answer counts are the trigger's alone
    /// (three gaps a hostile probe found: Eve forged an announcement to Ada's club, an entry in
    /// its audit log, and its event's counts).
    @Test func messagesAuditAndCountsAreWrittenOnlyForOnesOwnCommunities() async throws {
        try await CoreHarness.run { api in
            let (ada, eve) = (try await api.signIn("Ada"), try await api.signIn("Eve"))
            let (tigers, eves) = (try await api.community(by: ada), try await api.community(by: eve))
            try await withTestDatabase { db in
                func message(_ community: UUID) -> PostgresQuery {
                    """
                    INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data)
                    VALUES (gen_random_uuid(), 'notifications', 'post.created', 1, NOW(), \(community), \(eve.id), '{}')
                    """
                }
                #expect(await Self.run(message(tigers.id), as: eve.id, in: db) == .refused)
                #expect(await Self.run(message(eves.id), as: eve.id, in: db) == .rows(0))
                func audit(_ community: UUID) -> PostgresQuery {
                    "INSERT INTO audit_log (user_id, community_id, action) VALUES (\(eve.id), \(community), 'member.removed')"
                }
                #expect(await Self.run(audit(tigers.id), as: eve.id, in: db) == .refused)
                #expect(await Self.run(audit(eves.id), as: eve.id, in: db) == .rows(0))
                let counts: PostgresQuery = "SELECT count_answer_delta(gen_random_uuid(), NULL, 1000, 1000, 7, 3, 0)"
                #expect(await Self.run(counts, as: eve.id, in: db) == .refused)
                let recount: PostgresQuery = "SELECT count_instance_answers(gen_random_uuid(), NULL)"
                #expect(await Self.run(recount, as: eve.id, in: db) == .refused)
            }
        }
    }

    /// A member removed by another transaction while their own ran is still a member to that
    /// transaction's policies (the communities of its start), its message included: its writes
    /// stand or fall together, rather than the content passing and the message failing (a 500;
    /// migration 0055, found by a review).
    @Test func aMemberRemovedMeanwhileStillWritesTheirMessage() async throws {
        try await CoreHarness.run { api in
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            try await withTestDatabase { db in
                let removalStarted = AsyncStream<Void>.makeStream()
                let enterDone = AsyncStream<Void>.makeStream()
                // The removal starts first (its NOW() is earlier) and commits once Ada has entered.
                let removal = Task {
                    try await db.transaction(scope: .system) { connection in
                        try await connection.run("SELECT 1", logger: TestEnvironment.logger)
                        removalStarted.continuation.yield()
                        for await _ in enterDone.stream { break }
                        try await connection.run(
                            "UPDATE members SET left_at = NOW() WHERE community_id = \(club.id) AND user_id = \(ada.id)",
                            logger: TestEnvironment.logger)
                    }
                }
                for await _ in removalStarted.stream { break }
                var refused: (any Error)?
                do {
                    try await db.transaction(userId: ada.id) { connection in
                        enterDone.continuation.yield()
                        try await removal.value
                        try await connection.run(
                            """
                            INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data)
                            VALUES (gen_random_uuid(), 'notifications', 'post.created', 1, NOW(), \(club.id), \(ada.id), '{}')
                            """, logger: TestEnvironment.logger)
                    }
                } catch {
                    refused = error
                }
                #expect(refused == nil, "\(String(reflecting: refused))")
            }
        }
    }

    /// A `SECURITY DEFINER` function runs past the policies, so the services' role may call only
    /// those meant for it, each applying its rule to the ids it is given. `CREATE FUNCTION`
    /// grants every role, and two trigger helpers were callable by anyone until migration 0053:
    /// a new one fails here until it is revoked from `PUBLIC` or added below on purpose.
    @Test func theServicesMayCallOnlyTheSecurityDefinerFunctionsMeantForThem() async throws {
        let meant: Set<String> = [
            "app_cache_communities", "app_community_standing", "app_content_author", "app_created_communities",
            "app_dependant_name", "app_enter_as_user", "app_fellow_users", "app_idempotency_applied",
            "app_is_current_icon", "app_own_series", "app_read_communities", "app_register_device",
            "calendar_drop_answers", "calendar_hold_event", "calendar_move_answers", "calendar_placed_changes",
            "calendar_rekey_answers",
            "calendar_withdraw_departed", "calendar_withdraw_dependant", "care_take_planning_mark",
            "feed_search_config",
            "feed_search_hits",
            "outbox_backlog", "realtime_changes", "realtime_prune",
        ]
        let callable = try await withTestDatabase { db in
            var names: Set<String> = []
            for try await name in try await db.client.query(
                """
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' AND p.prosecdef AND p.prorettype <> 'trigger'::regtype
                  AND has_function_privilege('orbitcove_app', p.oid, 'EXECUTE')
                """, logger: TestEnvironment.logger
            ).decode(String.self) {
                names.insert(name)
            }
            return names
        }
        #expect(
            callable.subtracting(meant).isEmpty, "callable by the services: \(callable.subtracting(meant).sorted())")
        #expect(callable.contains("app_enter_as_user") && !callable.contains("count_answer_delta"))
    }

    /// Every table the services' role may write has row-level security: the migrations' ledger,
    /// the one table without it, is the owner's to write (a hostile probe's: with the services'
    /// credentials a row could be deleted, so that `migrate` ran its DDL again, or a checksum
    /// rewritten to pass an edited migration). The services may still read it.
    /// The tables the migrations create, and the migrator's own ledger.
    static let schemaTables: Set<String> = {
        let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Shared/OrbitCoveInfra/Migrations")
        var names: Set<String> = ["schema_migrations"]
        let files = (try? FileManager.default.contentsOfDirectory(atPath: migrations.path)) ?? []
        for file in files where file.hasSuffix(".sql") {
            let text = (try? String(contentsOf: migrations.appendingPathComponent(file), encoding: .utf8)) ?? ""
            for match in text.lowercased().matches(of: /create table (?:if not exists )?([a-z_0-9]+)/) {
                names.insert(String(match.1))
            }
        }
        return names
    }()

    @Test func theServicesWriteOnlyTablesUnderTheWall() async throws {
        let open = try await withTestDatabase { db in
            var names: [String] = []
            for try await name in try await db.client.query(
                """
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relrowsecurity
                  AND (has_table_privilege('orbitcove_app', c.oid, 'INSERT')
                       OR has_table_privilege('orbitcove_app', c.oid, 'UPDATE')
                       OR has_table_privilege('orbitcove_app', c.oid, 'DELETE')
                       OR has_table_privilege('orbitcove_app', c.oid, 'TRUNCATE'))
                ORDER BY 1
                """, logger: TestEnvironment.logger
            ).decode(String.self) {
                names.append(name)
            }
            // Only the schema's own tables: other tests make scratch tables for the services'
            // role beside them while this runs (`CommittingStatementTests`, `MessageBatchTests`).
            return names.filter(Self.schemaTables.contains)
        }
        #expect(Self.schemaTables.isSuperset(of: ["events", "rsvps", "users", "schema_migrations"]))
        #expect(open.isEmpty, "written by the services without row-level security: \(open)")
        try await withTestDatabase { db in
            let outcome = await Self.run("DELETE FROM schema_migrations WHERE false", as: nil, in: db)
            #expect(outcome == .refused, "\(outcome)")
            let read = try await db.client.query(
                "SELECT count(*)::int FROM schema_migrations", logger: TestEnvironment.logger)
            for try await count in read.decode(Int.self) { #expect(count > 0) }
        }
    }

    /// The realtime stream's feed reads every community's changes: only system work may, so a
    /// user's context (or none) is refused it, and cannot prune or read what it keeps.
    @Test func theRealtimeFeedIsReadOnlyBySystemWork() async throws {
        try await CoreHarness.run { api in
            let (ada, eve) = (try await api.signIn("Ada"), try await api.signIn("Eve"))
            let tigers = try await api.community(by: ada)
            _ = try await api.createEvent(
                in: tigers, by: ada, #"{"title":"Practice","startsAt":"2031-03-01T17:00:00Z"}"#)
            try await withTestDatabase { db in
                // From a snapshot that saw nothing of the log (xmin 1): every change is "new".
                let everything: PostgresQuery = "SELECT community_id FROM realtime_changes('1:1:')"
                let seen = try await db.transaction(scope: .system) { connection in
                    try await connection.query(everything, logger: TestEnvironment.logger).collect().count
                }
                #expect(seen > 0)
                #expect(await Self.run(everything, as: eve.id, in: db) == .refused)
                #expect(await Self.run(everything, as: ada.id, in: db) == .refused)
                #expect(await Self.run(everything, as: nil, in: db) == .refused)
                #expect(await Self.run("SELECT user_id FROM stream_user_changes", as: ada.id, in: db) == .refused)
                #expect(await Self.run("SELECT realtime_prune()", as: eve.id, in: db) == .refused)
            }
        }
    }

    @Test func adminsCannotRewriteWhatOnlyTheSystemKeeps() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let tigers = try await api.community(by: ada)
            try await withTestDatabase { db in
                for sql: PostgresQuery in [
                    "UPDATE communities SET subscription_status = 'active' WHERE id = \(tigers.id) RETURNING 1",
                    "UPDATE communities SET member_count = 1000 WHERE id = \(tigers.id) RETURNING 1",
                    "UPDATE communities SET created_by = \(UUID()) WHERE id = \(tigers.id) RETURNING 1",
                ] {
                    #expect(await Self.run(sql, as: ada.id, in: db) == .refused, "\(sql.sql)")
                }
                let rename: PostgresQuery =
                    "UPDATE communities SET name = 'Tigers!' WHERE id = \(tigers.id) RETURNING 1"
                #expect(await Self.run(rename, as: ada.id, in: db) == .rows(1))
            }
        }
    }

    /// Events (and posts, expenses, media alike): members read, the creator changes their own,
    /// admins any; nobody creates one as someone else or moves one to another community.
    @Test func eventsAreChangedByTheirCreatorOrAnAdminAndStayInTheirCommunity() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let tigers = try await api.community(by: ada)
            let lions = try await api.community(by: ben)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                let adasEvent = UUID.random()
                let create: PostgresQuery = """
                    INSERT INTO events (id, community_id, created_by, title, starts_at)
                    VALUES (\(adasEvent), \(tigers.id), \(ada.id), 'Practice', NOW()) RETURNING 1
                    """
                #expect(await Self.run(create, as: ada.id, in: db) == .rows(1))
                let asSomeoneElse: PostgresQuery = """
                    INSERT INTO events (community_id, created_by, title, starts_at)
                    VALUES (\(tigers.id), \(ada.id), 'Forged', NOW()) RETURNING 1
                    """
                #expect(await Self.run(asSomeoneElse, as: ben.id, in: db) == .refused)
                let bensEdit: PostgresQuery = "UPDATE events SET title = 'x' WHERE id = \(adasEvent) RETURNING 1"
                #expect(await Self.run(bensEdit, as: ben.id, in: db) == .rows(0))
                #expect(
                    await Self.run("DELETE FROM events WHERE id = \(adasEvent) RETURNING 1", as: ben.id, in: db)
                        == .rows(0))
                let move: PostgresQuery =
                    "UPDATE events SET community_id = \(lions.id) WHERE id = \(adasEvent) RETURNING 1"
                #expect(await Self.run(move, as: ada.id, in: db) == .refused)
                let bensEvent = UUID.random()
                let own: PostgresQuery = """
                    INSERT INTO events (id, community_id, created_by, title, starts_at)
                    VALUES (\(bensEvent), \(tigers.id), \(ben.id), 'Pickup game', NOW()) RETURNING 1
                    """
                #expect(await Self.run(own, as: ben.id, in: db) == .rows(1))
                let adminEdit: PostgresQuery = "UPDATE events SET title = 'Pickup' WHERE id = \(bensEvent) RETURNING 1"
                #expect(await Self.run(adminEdit, as: ada.id, in: db) == .rows(1))
                let handOver: PostgresQuery =
                    "UPDATE events SET created_by = \(ada.id) WHERE id = \(bensEvent) RETURNING 1"
                #expect(await Self.run(handOver, as: ben.id, in: db) == .refused)
            }
        }
    }

    @Test func anRSVPIsWrittenOnlyByItsOwnerForTheirOwnDependants() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let tigers = try await api.community(by: ada)
            try await api.join(ben, tigers, invitedBy: ada)
            try await withTestDatabase { db in
                let eventId = UUID.random()
                let adasChild = UUID.random()
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        """
                        INSERT INTO events (id, community_id, created_by, title, starts_at)
                        VALUES (\(eventId), \(tigers.id), \(ada.id), 'Practice', NOW())
                        """, logger: TestEnvironment.logger)
                    try await connection.run(
                        "INSERT INTO family_members (id, user_id, name) VALUES (\(adasChild), \(ada.id), 'Kid')",
                        logger: TestEnvironment.logger)
                }
                let forAda: PostgresQuery =
                    "INSERT INTO rsvps (event_id, user_id, status) VALUES (\(eventId), \(ada.id), 'no') RETURNING 1"
                #expect(await Self.run(forAda, as: ben.id, in: db) == .refused)
                let forAdasChild: PostgresQuery = """
                    INSERT INTO rsvps (event_id, user_id, family_member_id, status)
                    VALUES (\(eventId), \(ben.id), \(adasChild), 'no') RETURNING 1
                    """
                #expect(await Self.run(forAdasChild, as: ben.id, in: db) == .refused)
                let own: PostgresQuery =
                    "INSERT INTO rsvps (event_id, user_id, status) VALUES (\(eventId), \(ben.id), 'yes') RETURNING 1"
                #expect(await Self.run(own, as: ben.id, in: db) == .rows(1))
                let hijack: PostgresQuery = "UPDATE rsvps SET user_id = \(ada.id) WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(hijack, as: ben.id, in: db) == .refused)
            }
        }
    }

    @Test func aCalendarFeedIsMadeOnlyForTheOwnersCommunityAndNeverMoves() async throws {
        try await CoreHarness.run { api in
            let (ada, eve) = (try await api.signIn("Ada"), try await api.signIn("Eve"))
            let (tigers, eves) = (try await api.community(by: ada), try await api.community(by: eve))
            try await withTestDatabase { db in
                func feed(of user: UUID, for community: UUID?) -> PostgresQuery {
                    """
                    INSERT INTO calendar_feeds (user_id, community_id, token_hash)
                    VALUES (\(user), \(community), \(String(repeating: "0", count: 48) + UUID.random().uuidString.prefix(16)))
                    RETURNING 1
                    """
                }
                #expect(await Self.run(feed(of: eve.id, for: tigers.id), as: eve.id, in: db) == .refused)
                #expect(await Self.run(feed(of: ada.id, for: tigers.id), as: ada.id, in: db) == .rows(1))
                #expect(await Self.run(feed(of: ada.id, for: nil), as: ada.id, in: db) == .rows(1))
                let move: PostgresQuery =
                    "UPDATE calendar_feeds SET community_id = \(eves.id) WHERE user_id = \(ada.id) RETURNING 1"
                #expect(await Self.run(move, as: ada.id, in: db) == .refused)
                let revoke: PostgresQuery =
                    "UPDATE calendar_feeds SET revoked_at = NOW() WHERE user_id = \(ada.id) RETURNING 1"
                #expect(await Self.run(revoke, as: ada.id, in: db) == .rows(2))
            }
        }
    }

    /// Capacity 1: Ada has the place, Ben waits. Ben cannot clear his `waitlisted`, move his
    /// `queued_at` earlier, or answer again in SQL as a confirmed yes.
    @Test func aPlaceInLineIsGivenNeverTaken() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            try await api.join(ben, club, invitedBy: ada)
            let event = try await api.createEvent(
                in: club, by: ada, #"{"title":"Match","startsAt":"2031-05-01T15:00:00Z","capacity":1}"#)
            let rsvp = "/api/v1/communities/\(club.id)/events/\(event.id)/rsvp"
            #expect(
                try await !api.call(.post, rsvp, as: ada, json: #"{"status":"yes"}"#).data(EventRSVP.self).waitlisted)
            #expect(
                try await api.call(.post, rsvp, as: ben, json: #"{"status":"yes"}"#).data(EventRSVP.self).waitlisted)
            try await withTestDatabase { db in
                let jump: PostgresQuery = "UPDATE rsvps SET waitlisted = false WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(jump, as: ben.id, in: db) == .refused)
                let earlier: PostgresQuery = """
                    UPDATE rsvps SET queued_at = queued_at - INTERVAL '1 hour' WHERE user_id = \(ben.id) RETURNING 1
                    """
                #expect(await Self.run(earlier, as: ben.id, in: db) == .refused)
                let placed: PostgresQuery = """
                    INSERT INTO rsvps (event_id, user_id, status, waitlisted) VALUES (\(event.id), \(ben.id), 'yes', true)
                    RETURNING 1
                    """
                #expect(
                    await Self.run("DELETE FROM rsvps WHERE user_id = \(ben.id) RETURNING 1", as: ben.id, in: db)
                        == .rows(1))
                #expect(await Self.run(placed, as: ben.id, in: db) == .refused)
                let again: PostgresQuery = """
                    INSERT INTO rsvps (event_id, user_id, status, queued_at) VALUES (\(event.id), \(ben.id), 'yes', NOW())
                    RETURNING 1
                    """
                #expect(await Self.run(again, as: ben.id, in: db) == .rows(1))
                let declined: PostgresQuery = "UPDATE rsvps SET status = 'no' WHERE user_id = \(ben.id) RETURNING 1"
                #expect(await Self.run(declined, as: ben.id, in: db) == .rows(1))
                let yesWithOldPlace: PostgresQuery = """
                    UPDATE rsvps SET status = 'yes' WHERE user_id = \(ben.id) RETURNING 1
                    """
                #expect(await Self.run(yesWithOldPlace, as: ben.id, in: db) == .refused)
                // What Ben wrote himself waits; Ada keeps the one place.
                let confirmed = try await count(
                    "SELECT count(*)::int FROM rsvps WHERE event_id = \(event.id) AND status = 'yes' AND NOT waitlisted",
                    in: db)
                let counted = try await count(
                    "SELECT going FROM event_instance_counts WHERE event_id = \(event.id)", in: db)
                #expect(confirmed == 1 && counted == 1)
            }
            let attendance = try await api.call(
                .get, "/api/v1/communities/\(club.id)/events/\(event.id)/attendance", as: ada
            ).data(EventAttendance.self)
            #expect(attendance.counts.going == 1 && attendance.responses.first?.userId == ada.id)
        }
    }

    /// A weekly series with one place per instance: Ada has the first instance's place, Ben the
    /// second's. Ben cannot carry his confirmed yes over to the full first instance in SQL.
    @Test func anAnswerDoesNotMoveToAnotherInstance() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            try await api.join(ben, club, invitedBy: ada)
            let series = try await api.createEvent(
                in: club, by: ada,
                #"{"title":"Practice","startsAt":"2031-05-06T16:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=4","capacity":1}"#
            )
            let rsvp = "/api/v1/communities/\(club.id)/events/\(series.id)/rsvp"
            let first = #"{"status":"yes","recurrenceId":"2031-05-06T16:00:00Z"}"#
            let second = #"{"status":"yes","recurrenceId":"2031-05-13T16:00:00Z"}"#
            #expect(try await !api.call(.post, rsvp, as: ada, json: first).data(EventRSVP.self).waitlisted)
            #expect(try await !api.call(.post, rsvp, as: ben, json: second).data(EventRSVP.self).waitlisted)
            try await withTestDatabase { db in
                let move: PostgresQuery = """
                    UPDATE rsvps SET recurrence_id = '2031-05-06T16:00:00Z' WHERE user_id = \(ben.id) RETURNING 1
                    """
                let outcome = await Self.run(move, as: ben.id, in: db)
                let confirmed = try await count(
                    """
                    SELECT count(*)::int FROM rsvps WHERE event_id = \(series.id)
                      AND recurrence_id = '2031-05-06T16:00:00Z' AND status = 'yes' AND NOT waitlisted
                    """, in: db)
                #expect(outcome == .refused && confirmed == 1)
            }
        }
    }
}
