import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

@testable import NotificationsService

/// The notices of several messages, written in one statement (as the consumer writes what
/// arrives together), reach exactly whom each notice's audience names: the audiences do not
/// mix across notices or communities, a message tells each person once (its first notice naming
/// them, as when each notice had a statement of its own), and writing the same messages again
/// adds nothing.
@Test func noticesOfManyMessagesWrittenTogetherKeepTheirOwnAudiences() async throws {
    try await CoreHarness.run { api in
        let (coach, ada, ben, cy, dee) = (
            try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
            try await api.signIn("Cy"), try await api.signIn("Dee")
        )
        let club = try await api.community(by: coach)
        let other = try await api.community(by: dee)
        for person in [ada, ben, cy] { try await api.join(person, club, invitedBy: coach) }
        try await api.join(ada, other, invitedBy: dee)
        let messages = (0..<7).map { _ in UUID() }
        let yesterday = Date(timeIntervalSinceNow: -86_400)
        let link = DeepLink(communityId: club.id)
        let written = [
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .members(of: club.id, except: [ben.id]), type: .communityUpdate, title: "everyone",
                        body: "", link: link),
                    // The coach heard "everyone" from this message already: one notification a message.
                    Notice(
                        audience: .admins(of: club.id, except: []), type: .memberLeft, title: "admins too", body: "",
                        link: link),
                ], message: messages[0], occurredAt: Date()),
            HistoryWriter.MessageNotices(
                notices: [
                    // Dee is not a member of the club: named, but not told.
                    Notice(
                        audience: .users([cy.id, dee.id], of: club.id, except: []), type: .rsvpRequest, title: "named",
                        body: "", link: link)
                ], message: messages[1], occurredAt: Date()),
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .members(of: other.id, except: []), type: .communityUpdate, title: "other club",
                        body: "", link: DeepLink(communityId: other.id))
                ], message: messages[2], occurredAt: Date()),
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .person(ben.id, of: club.id), type: .memberRemoved, title: "you", body: "", link: link
                    )
                ], message: messages[3], occurredAt: Date()),
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .admins(of: club.id, except: []), type: .memberLeft, title: "admins", body: "",
                        link: link)
                ], message: messages[4], occurredAt: Date()),
            // A change from before anyone joined: the members then are told, nobody joined since
            // is (so here nobody); users named by the message are, whenever they joined.
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .members(of: other.id, except: []), type: .communityUpdate, title: "before",
                        body: "", link: DeepLink(communityId: other.id))
                ], message: messages[5], occurredAt: yesterday),
            HistoryWriter.MessageNotices(
                notices: [
                    Notice(
                        audience: .users([ada.id], of: other.id, except: []), type: .rsvpRequest,
                        title: "named, before", body: "", link: DeepLink(communityId: other.id))
                ], message: messages[6], occurredAt: yesterday),
        ]
        let rows: [String] = try await withTestDatabase { database in
            for _ in 0..<2 {
                try await database.transaction(scope: .system) { connection in
                    try await HistoryWriter().write(written, on: connection, logger: TestEnvironment.logger)
                }
            }
            var rows: [String] = []
            for row in try await database.systemQuery(
                "SELECT title, user_id FROM notifications WHERE message_id = ANY(\(messages)) ORDER BY title, user_id")
            {
                let (title, user) = try row.decode((String, UUID).self)
                let name =
                    [(coach, "coach"), (ada, "ada"), (ben, "ben"), (cy, "cy"), (dee, "dee")]
                    .first { $0.0.id == user }?.1 ?? "?"
                rows.append("\(title): \(name)")
            }
            return rows
        }
        let expected = [
            "admins: coach", "everyone: ada", "everyone: coach", "everyone: cy", "named: cy", "other club: ada",
            "other club: dee", "you: ben", "named, before: ada",
        ]
        #expect(rows.sorted() == expected.sorted(), "\(rows)")
    }
}
