import Foundation
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// What a member sees: their history page by page, filtered, counted and marked read; each
/// message's rows written once, however often it is delivered; old rows pruned.
@Suite struct NotificationHistoryTests {
    @Test func historyPagesFiltersCountsAndMarks() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
                let (reds, blues) = (try await api.community(by: coach), try await api.community(by: coach))
                for club in [reds, blues] { try await api.join(ada, club, invitedBy: coach) }
                for index in 0..<3 {
                    for club in [reds, blues] {
                        _ = try await api.createEvent(
                            in: club, by: coach,
                            #"{"title":"Game \#(index)","startsAt":"2031-04-0\#(index + 1)T10:00:00Z"}"#)
                    }
                }
                #expect(try await harness.settled(ada, .eventCreated, count: 6))

                // Pages of two, newest first, every row once.
                var seen: [UUID] = []
                var cursor: String?
                repeat {
                    let path = "/api/v1/me/notifications?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                    let page = try await harness.call(.get, path, as: ada).page(NotificationRecord.self)
                    seen += page.items.map(\.id)
                    cursor = page.next
                } while cursor != nil
                let all = try await harness.history(of: ada)
                #expect(seen == all.map(\.id) && all.count == 6)
                #expect(zip(all, all.dropFirst()).allSatisfy { $0.createdAt >= $1.createdAt })

                let count = "/api/v1/me/notifications/unread-count"
                #expect(try await harness.call(.get, count, as: ada).data(UnreadCount.self).count == 6)
                #expect(
                    try await harness.call(.get, "\(count)?communityId=\(reds.id)", as: ada).data(UnreadCount.self)
                        .count
                        == 3)
                let onlyBlues = try await harness.history(of: ada, "&communityId=\(blues.id)")
                #expect(onlyBlues.count == 3 && onlyBlues.allSatisfy { $0.communityId == blues.id })

                // One read, then the rest of one community.
                let first = try #require(all.first)
                let read = try await harness.call(.post, "/api/v1/me/notifications/\(first.id)/read", as: ada)
                let readAt = try #require(try read.data(NotificationRecord.self).readAt)
                let again = try await harness.call(.post, "/api/v1/me/notifications/\(first.id)/read", as: ada)
                #expect(try again.data(NotificationRecord.self).readAt == readAt)
                #expect(try await harness.history(of: ada, "&unreadOnly=true").count == 5)
                let marked = try await harness.call(
                    .post, "/api/v1/me/notifications/read-all?communityId=\(reds.id)", as: ada)
                #expect(try marked.data(MarkedRead.self).marked == (first.communityId == reds.id ? 2 : 3))
                let unread = try await harness.history(of: ada, "&unreadOnly=true")
                #expect(unread.allSatisfy { $0.communityId == blues.id })
                _ = try await harness.call(.post, "/api/v1/me/notifications/read-all", as: ada)
                #expect(try await harness.call(.get, count, as: ada).data(UnreadCount.self).count == 0)

                // Someone else's notification, or no notification: not found.
                let coachs = try #require(try await harness.history(of: coach).first)
                for id in [coachs.id.uuidString, UUID().uuidString, "not-an-id"] {
                    let other = try await harness.call(.post, "/api/v1/me/notifications/\(id)/read", as: ada)
                    #expect(other.status == .notFound && other.errorCode == "NOTIFICATION_NOT_FOUND")
                }
                #expect(try await harness.history(of: coach).first?.readAt == nil)
                for bad in ["?unreadOnly=maybe", "?communityId=reds", "?limit=0", "?cursor=nope"] {
                    let reply = try await harness.call(.get, "/api/v1/me/notifications\(bad)", as: ada)
                    #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(bad)")
                }
                #expect(try await harness.call(.get, count, as: nil).status == .unauthorized)
            }
        }
    }

    /// A message delivered again, even after its inbox entry is gone, writes no second row.
    @Test func aMessageWritesEachRecipientsRowOnce() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, _, ben) = try await api.clubWithTwoMembers()
                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                #expect(try await harness.settled(ben, .eventCreated, count: 1))
                try await withTestDatabase { database in
                    let message = try #require(
                        try await database.systemQuery(
                            """
                            SELECT id FROM outbox WHERE message_type = 'event.created' AND queue = 'notifications'
                              AND data -> 'event' ->> 'eventId' = \(event.id.lowercasedString)
                            """
                        ).first?.decode(UUID.self))
                    let rows = "SELECT count(*)::int FROM notifications WHERE message_id = '\(message)'"
                    #expect(try await count(PostgresQuery(unsafeSQL: rows), in: database) == 2)
                    // Replayed as the inbox pruner would leave it: forgotten by the inbox.
                    try await database.systemQuery(
                        "DELETE FROM inbox WHERE consumer = 'notifications' AND message_id = \(message)")
                    try await database.systemQuery("UPDATE outbox SET published_at = NULL WHERE id = \(message)")
                    _ = try await eventually {
                        try await count(
                            "SELECT count(*)::int FROM inbox WHERE consumer = 'notifications' AND message_id = \(message)",
                            in: database) == 1
                    }
                    #expect(try await count(PostgresQuery(unsafeSQL: rows), in: database) == 2)
                }
                #expect(try await harness.history(of: ben).filter { $0.type == .eventCreated }.count == 1)
            }
        }
    }

    @Test func historyOlderThanTheRetentionPeriodGoes() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            try await withTestDatabase { database in
                for days in [91, 89] {
                    try await database.systemQuery(
                        """
                        INSERT INTO notifications (user_id, community_id, type, title, body, created_at)
                        VALUES (\(ada.id), \(club.id), 'community_update', \("\(days) days"), '',
                                NOW() - make_interval(days => \(days)::int))
                        """)
                }
                let housekeeping = NotificationHousekeeping(
                    database: database, retentionDays: 90, logger: TestEnvironment.logger)
                // Any service running now prunes the same way; this call may find the work done.
                try await housekeeping.prune()
                let left = try await database.systemQuery(
                    "SELECT title FROM notifications WHERE user_id = \(ada.id) AND title LIKE '%days' ORDER BY title")
                #expect(try left.map { try $0.decode(String.self) } == ["89 days"])
            }
        }
    }
}
