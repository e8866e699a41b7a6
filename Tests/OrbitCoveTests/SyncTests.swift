import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// `GET /communities/{id}/sync`: full, then incremental; never missing a change that
/// commits concurrently with a sync; costing what changed, not what exists.
@Suite struct SyncTests {
    /// A client's copy of a community's members, kept by syncing.
    struct Replica {
        var members: [UUID: CommunityMember] = [:]
        var token: String?

        mutating func apply(_ sync: CommunitySync) {
            if sync.full { members = [:] }
            for member in sync.members.created + sync.members.updated { members[member.userId] = member }
            for id in sync.members.deleted { members[id] = nil }
            token = sync.syncToken
        }

        func path(_ community: UUID) -> String {
            "/api/v1/communities/\(community)/sync" + (token.map { "?since=\($0)" } ?? "")
        }
    }

    @Test func aFullSyncThenOnlyWhatChanged() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            var replica = Replica()
            let full = try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self)
            #expect(full.full && full.community?.id == club.id && full.members.created.map(\.userId) == [ada.id])
            #expect(full.events == SyncSection() && full.posts == SyncSection() && full.transactions == SyncSection())
            replica.apply(full)

            let quiet = try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self)
            #expect(!quiet.full && quiet.community == nil && quiet.members == SyncSection())
            replica.apply(quiet)

            try await api.join(ben, club, invitedBy: ada)
            let joined = try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self)
            #expect(joined.members.created.map(\.userId) == [ben.id] && joined.members.updated.isEmpty)
            #expect(joined.community?.memberCount == 2)
            replica.apply(joined)

            try await api.call(
                .patch, "/api/v1/communities/\(club.id)/members/\(ben.id)", as: ada, json: #"{"role":"admin"}"#)
            let promoted = try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self)
            #expect(promoted.members.updated.map(\.role) == [.admin] && promoted.members.created.isEmpty)
            replica.apply(promoted)

            try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: ada)
            let left = try await api.call(.get, replica.path(club.id), as: ben).data(CommunitySync.self)
            #expect(left.members.deleted == [ada.id])
            replica.apply(left)
            #expect(Set(replica.members.keys) == [ben.id])
            // Ada is out: her token is worth nothing now.
            #expect(try await api.call(.get, replica.path(club.id), as: ada).status == .notFound)

            let forged = try await api.call(.get, "/api/v1/communities/\(club.id)/sync?since=bm9wZQ", as: ben)
            #expect(forged.status == .badRequest && forged.fieldErrors.keys.contains("since"))
            // Well-formed but impossible snapshots (xmin after xmax, a running id outside them).
            for snapshot in ["9:3:", "3:9:12", "3:9:x"] {
                let token = Data("v1|\(snapshot)|0".utf8).base64URLEncodedString()
                let impossible = try await api.call(
                    .get, "/api/v1/communities/\(club.id)/sync?since=\(token)", as: ben)
                #expect(impossible.status == .badRequest, "\(snapshot)")
            }
        }
    }

    /// A transaction that started before a sync and commits after it carries an earlier
    /// timestamp than the sync: a timestamp token would skip it for ever.
    @Test func aChangeCommittedAfterASyncWithAnEarlierTimestampIsNotMissed() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            try await api.join(ben, club, invitedBy: ada)
            var replica = Replica()
            replica.apply(try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self))

            let path = replica.path(club.id)
            let during = try await withTestDatabase { database in
                try await database.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE members SET nickname = 'Benji' WHERE community_id = \(club.id) AND user_id = \(ben.id)",
                        logger: TestEnvironment.logger)
                    // While this transaction is open, a client syncs and sees nothing new.
                    return try await api.call(.get, path, as: ada).data(CommunitySync.self)
                }
            }
            #expect(during.members == SyncSection())
            replica.apply(during)
            let after = try await api.call(.get, replica.path(club.id), as: ada).data(CommunitySync.self)
            #expect(after.members.updated.map(\.nickname) == ["Benji"])
        }
    }

    @Test func concurrentWritersAndASyncingClientEndInTheSameState() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_INVITE_LOOKUPS_PER_MINUTE": "1000"]) { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let invite = try await api.call(.post, "/api/v1/communities/\(club.id)/invites", as: ada, json: "{}")
                .data(Invite.self)
            var people: [CoreHarness.Person] = []
            for index in 0..<8 { people.append(try await api.signIn("Member\(index)")) }
            let crowd = people

            let replica = try await withThrowingTaskGroup(of: Replica?.self) { group in
                // Four writers: people join, leave, rejoin and get promoted, concurrently.
                for writer in 0..<4 {
                    group.addTask {
                        for round in 0..<12 {
                            let person = crowd[(writer * 2 + round) % crowd.count]
                            switch round % 3 {
                            case 0: try await api.call(.post, "/api/v1/invites/\(invite.code)/join", as: person)
                            case 1:
                                try await api.call(
                                    .patch, "/api/v1/communities/\(club.id)/members/\(person.id)", as: ada,
                                    json: #"{"role":"\#(round % 2 == 0 ? "admin" : "member")"}"#)
                            default: try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: person)
                            }
                        }
                        return nil
                    }
                }
                // The client syncs in a loop meanwhile.
                group.addTask {
                    var replica = Replica()
                    for _ in 0..<40 {
                        let reply = try await api.call(.get, replica.path(club.id), as: ada)
                        replica.apply(try reply.data(CommunitySync.self))
                    }
                    return replica
                }
                var result: Replica?
                for try await finished in group where finished != nil { result = finished }
                return try #require(result)
            }
            // Once the writers are done, one more sync brings the client to the server's state.
            var final = replica
            final.apply(try await api.call(.get, final.path(club.id), as: ada).data(CommunitySync.self))
            var server: [CommunityMember] = []
            var cursor: String?
            repeat {
                let page = try await api.call(
                    .get, "/api/v1/communities/\(club.id)/members?limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""),
                    as: ada
                ).page(CommunityMember.self)
                server += page.items
                cursor = page.next
            } while cursor != nil
            #expect(final.members.count == server.count)
            #expect(Dictionary(uniqueKeysWithValues: server.map { ($0.userId, $0) }) == final.members)
        }
    }

    /// Past ``SyncEngine/mostChanges`` change-log entries since its token, an incremental sync
    /// is a full sync, paged (found by a review: every change was read, loaded and answered in
    /// one response, however many, for a token the client may have made up); the stream says
    /// `reset` for the same reason (`StreamTests`).
    @Test func anIncrementalSyncPastItsMostChangesIsAFullSync() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let path = "/api/v1/communities/\(club.id)/sync"
            var token = try await api.call(.get, path, as: ada).data(CommunitySync.self).syncToken
            try await Self.logChanges(SyncEngine.mostChanges, in: club)
            let within = try await api.call(.get, path + "?since=\(token)", as: ada).data(CommunitySync.self)
            #expect(!within.full && within.members.deleted.count == SyncEngine.mostChanges)
            token = within.syncToken
            try await Self.logChanges(SyncEngine.mostChanges + 1, in: club)
            let past = try await api.call(.get, path + "?since=\(token)", as: ada).data(CommunitySync.self)
            #expect(past.full && past.community?.id == club.id)
            #expect(past.members.created.map(\.userId) == [ada.id] && past.members.deleted.isEmpty)
            // A token ahead of the database (made up, or another database's) is no position to
            // go on from (found by a probe: it was answered "nothing changed").
            let ahead = try #require(PostgresSnapshot(try SyncToken(text: past.syncToken).snapshot))
            let future = SyncToken(snapshot: "\(ahead.xmax + 1_000_000):\(ahead.xmax + 1_000_000):", issuedAt: Date())
            let fromAhead = try await api.call(.get, path + "?since=\(future.text)", as: ada).data(CommunitySync.self)
            #expect(fromAhead.full && fromAhead.members.created.map(\.userId) == [ada.id])
        }
    }

    /// `count` change-log entries for members of `club` that do not exist (a sync says they
    /// were deleted), committed now.
    static func logChanges(_ count: Int, in club: Community) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            try await owner.client.query(
                """
                INSERT INTO change_log (community_id, entity_kind, entity_id, operation, txid)
                SELECT \(club.id), 'member', gen_random_uuid(), 'delete', pg_current_xact_id()
                FROM generate_series(1, \(count))
                """, logger: TestEnvironment.logger)
        }
    }

    /// The change log is read from the token's xmin on an index: thousands of older changes
    /// in the same community are not even looked at.
    @Test func aSyncReadsOnlyTheChangesSinceItsToken() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            // Changes from long ago (committed, frozen transaction ids), as a big, old community
            // would have; then statistics, as autovacuum would keep them. More than the other
            // tests running meanwhile write (a read from the token may look at theirs): 20,000
            // were once fewer, and the count below could not tell the two reads apart.
            let old = 60_000
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await owner.client.query(
                    """
                    INSERT INTO change_log (community_id, entity_kind, entity_id, operation, txid)
                    SELECT \(club.id), 'member', gen_random_uuid(), 'update', '3'::xid8 FROM generate_series(1, \(old))
                    """, logger: TestEnvironment.logger)
                try await owner.client.query("ANALYZE change_log", logger: TestEnvironment.logger)
            }
            let token = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: ada)
                .data(CommunitySync.self).syncToken
            try await api.join(ben, club, invitedBy: ada)

            let snapshot = try SyncToken(text: token).snapshot
            let query = SyncEngine.changes(in: club.id, since: snapshot, kinds: ["member"])
            let plan = try await withTestDatabase { database in
                try await database.transaction(userId: ada.id) { connection in
                    let explain = PostgresQuery(
                        unsafeSQL: "EXPLAIN (ANALYZE, FORMAT JSON) " + query.sql, binds: query.binds)
                    var text = ""
                    for try await row in try await connection.query(explain, logger: TestEnvironment.logger).decode(
                        String.self)
                    {
                        text += row
                    }
                    return text
                }
            }
            // What a read from the token may look at, counted after the plan ran: the club's own
            // rows since its creation (another test's open transaction can hold the snapshot's
            // xmin back), or, read through the transaction-id index alone (0048), every
            // community's rows from the snapshot's xmin on. None of the old rows.
            let recent = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                var count = 0
                for try await value in try await owner.client.query(
                    """
                    SELECT greatest(
                        (SELECT count(*) FROM change_log WHERE community_id = \(club.id) AND txid <> '3'::xid8),
                        (SELECT count(*) FROM change_log
                         WHERE txid <> '3'::xid8 AND txid >= pg_snapshot_xmin(\(snapshot)::pg_snapshot)))::int
                    """,
                    logger: TestEnvironment.logger
                ).decode(Int.self) {
                    count = value
                }
                return count
            }
            let scans = Self.nodes(in: try JSONSerialization.jsonObject(with: Data(plan.utf8)))
                .filter { $0["Relation Name"] as? String == "change_log" }
            #expect(!scans.isEmpty)
            #expect(recent < old)
            for scan in scans {
                let type = scan["Node Type"] as? String ?? ""
                #expect(type.contains("Index") || type.contains("Bitmap"), "change_log read by \(type)")
                let loops = max(scan["Actual Loops"] as? Int ?? 1, 1)
                let perLoop = (scan["Actual Rows"] as? Int ?? 0) + (scan["Rows Removed by Filter"] as? Int ?? 0)
                let examined = perLoop * loops
                #expect(
                    examined <= recent,
                    "examined \(examined) change-log rows where a read from the token could look at \(recent)")
            }
            let changes = try await api.call(.get, "/api/v1/communities/\(club.id)/sync?since=\(token)", as: ada)
                .data(CommunitySync.self)
            #expect(changes.members.created.map(\.userId) == [ben.id])
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                try await owner.client.query(
                    "DELETE FROM change_log WHERE community_id = \(club.id) AND txid = '3'::xid8",
                    logger: TestEnvironment.logger)
            }
        }
    }

    /// Every node of an `EXPLAIN (FORMAT JSON)` plan.
    static func nodes(in json: Any) -> [[String: Any]] {
        var found: [[String: Any]] = []
        if let object = json as? [String: Any] {
            if object["Node Type"] != nil { found.append(object) }
            for value in object.values { found += nodes(in: value) }
        } else if let array = json as? [Any] {
            for value in array { found += nodes(in: value) }
        }
        return found
    }
}
