import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// One change, across the queue, through real PostgreSQL and RabbitMQ: auth issues a token,
/// core verifies it against auth's JWKS and creates a community with its outbox message, the
/// relay publishes it with confirms, and notifications records it once, even if redelivered.
@Suite struct CommunityFlowTests {
    @Test func aNewCommunityReachesItsCreatorsNotificationsExactlyOnce() async throws {
        try await CoreHarness.run { api in
            let (ana, ben) = (try await api.signIn("Ana"), try await api.signIn("Ben"))
            try await NotificationsHarness.run(api) { notifications in
                let notificationsClient = notifications.client
                let name = "Tigers \(UUID().uuidString.prefix(6))"
                let created = try await api.call(
                    .post, "/api/v1/communities", as: ana,
                    json: #"{"name":"\#(name)","settings":{"timezone":"Europe/Berlin"}}"#)
                #expect(created.status == .created)
                let community = try created.data(Community.self)
                #expect(community.name == name && community.role == .admin && community.memberCount == 1)
                #expect(community.settings.timezone == "Europe/Berlin")

                let hidden = try await api.call(.get, "/api/v1/communities/\(community.id)", as: ben)
                #expect(hidden.status == .notFound && hidden.errorCode == "COMMUNITY_NOT_FOUND")
                let anonymous = try await api.call(.get, "/api/v1/communities/\(community.id)", as: nil)
                #expect(anonymous.status == .unauthorized && anonymous.errorCode == "UNAUTHENTICATED")

                try await withTestDatabase { database in
                    let messageId = try await outboxMessageId(for: community.id, in: database)
                    #expect(try await eventually { try await inboxCount(messageId, database) == 1 })
                    #expect(try await notificationCount(community.id, database) == 1)

                    // Publish the same message again, as a redelivery would: recorded once.
                    try await database.systemQuery(
                        "UPDATE outbox SET published_at = NULL WHERE id = \(messageId)")
                    #expect(try await eventually { try await isPublished(messageId, database) })
                    #expect(
                        try await eventually {
                            try await AMQPProbe.depth(of: "notifications", settings: TestEnvironment.amqpSettings())
                                .messages == 0
                        })
                    #expect(try await inboxCount(messageId, database) == 1)
                    #expect(try await notificationCount(community.id, database) == 1)
                }

                let history = try await notificationsClient.executeRequest(
                    uri: "/api/v1/me/notifications?limit=5", method: .get,
                    headers: [.authorization: "Bearer \(ana.token)"], body: nil)
                #expect(history.status == .ok)
                let page = try JSONSerialization.jsonObject(with: Data(buffer: history.body)) as? [String: Any]
                let items = page?["data"] as? [[String: Any]] ?? []
                #expect(items.contains { $0["communityId"] as? String == community.id.lowercasedString })
            }
        }
    }
}

private func outboxMessageId(for communityId: UUID, in database: Database) async throws -> UUID {
    let rows = try await database.systemQuery(
        "SELECT id FROM outbox WHERE community_id = \(communityId) AND message_type = 'community.created'")
    for row in rows { return try row.decode(UUID.self) }
    throw PostgresNoRows()
}

private struct PostgresNoRows: Error {}

private func inboxCount(_ messageId: UUID, _ database: Database) async throws -> Int {
    try await count(
        "SELECT count(*)::int FROM inbox WHERE consumer = 'notifications' AND message_id = \(messageId)", in: database)
}

private func notificationCount(_ communityId: UUID, _ database: Database) async throws -> Int {
    try await count("SELECT count(*)::int FROM notifications WHERE community_id = \(communityId)", in: database)
}

private func isPublished(_ messageId: UUID, _ database: Database) async throws -> Bool {
    try await count(
        "SELECT count(*)::int FROM outbox WHERE id = \(messageId) AND published_at IS NOT NULL", in: database)
        == 1
}
