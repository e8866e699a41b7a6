import AuthService
import CoreService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// One change, across the queue, through real PostgreSQL and RabbitMQ: auth issues a token,
/// core verifies it against auth's JWKS and creates a community with its outbox message, the
/// relay publishes it with confirms, and notifications records it once, even if redelivered.
@Suite struct CommunityFlowTests {
    @Test func aNewCommunityReachesItsCreatorsNotificationsExactlyOnce() async throws {
        let authRuntime = try TestEnvironment.runtime(name: "orbitcove-auth")
        let auth = authRuntime.makeApplication(
            try await AuthApplication.parts(
                runtime: authRuntime,
                environment: Environment([
                    "ORBITCOVE_AUTH_DEV_LOGIN": "true",
                    "ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation,
                ])))

        // Auth runs live (on a port the test framework picks) so core and notifications fetch its JWKS over HTTP.
        try await auth.test(.live) { authClient in
            let authPort = try #require(authClient.port)
            let jwks = ["ORBITCOVE_JWKS_URL": "http://127.0.0.1:\(authPort)/.well-known/jwks.json"]
            let coreRuntime = try TestEnvironment.runtime(name: "orbitcove-core", extra: jwks)
            let core = coreRuntime.makeApplication(try CoreApplication.parts(runtime: coreRuntime))
            let notificationsRuntime = try TestEnvironment.runtime(name: "orbitcove-notifications", extra: jwks)
            let notifications = notificationsRuntime.makeApplication(
                try NotificationsApplication.parts(runtime: notificationsRuntime))

            let ana = try await signIn(authClient, name: "Ana")
            let ben = try await signIn(authClient, name: "Ben")
            try await notifications.test(.router) { notificationsClient in
                try await core.test(.router) { coreClient in
                    let name = "Tigers \(UUID().uuidString.prefix(6))"
                    let community = try await coreClient.execute(
                        uri: "/api/v1/communities", method: .post, headers: [.authorization: "Bearer \(ana)"],
                        body: ByteBuffer(string: #"{"name":"\#(name)","settings":{"timezone":"Europe/Berlin"}}"#)
                    ) { response in
                        #expect(response.status == .created)
                        return try decodeData(Community.self, response)
                    }
                    #expect(community.name == name && community.role == .admin && community.memberCount == 1)
                    #expect(community.settings.timezone == "Europe/Berlin")

                    try await coreClient.execute(
                        uri: "/api/v1/communities/\(community.id)", method: .get,
                        headers: [.authorization: "Bearer \(ben)"]
                    ) { response in
                        #expect(response.status == .notFound)
                        let envelope = try decodeError(response)
                        #expect(envelope.error.code == "COMMUNITY_NOT_FOUND")
                    }
                    try await coreClient.execute(uri: "/api/v1/communities/\(community.id)", method: .get) { response in
                        #expect(response.status == .unauthorized)
                        let envelope = try decodeError(response)
                        #expect(envelope.error.code == "UNAUTHENTICATED")
                    }

                    try await withTestDatabase { database in
                        let messageId = try await outboxMessageId(for: community.id, in: database)
                        #expect(try await eventually { try await inboxCount(messageId, database) == 1 })
                        #expect(try await notificationCount(community.id, database) == 1)

                        // Publish the same message again, as a redelivery would: recorded once.
                        try await database.client.query(
                            "UPDATE outbox SET published_at = NULL WHERE id = \(messageId)",
                            logger: TestEnvironment.logger)
                        #expect(try await eventually { try await isPublished(messageId, database) })
                        #expect(
                            try await eventually {
                                try await AMQPProbe.depth(of: "notifications", settings: TestEnvironment.amqpSettings())
                                    .messages == 0
                            })
                        #expect(try await inboxCount(messageId, database) == 1)
                        #expect(try await notificationCount(community.id, database) == 1)
                    }

                    try await notificationsClient.execute(
                        uri: "/api/v1/me/notifications?limit=5", method: .get,
                        headers: [.authorization: "Bearer \(ana)"]
                    ) { response in
                        #expect(response.status == .ok)
                        let page = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                        let items = page?["data"] as? [[String: Any]] ?? []
                        #expect(items.contains { $0["communityId"] as? String == community.id.uuidString })
                    }
                }
            }
        }
    }
}

private func signIn(_ client: some TestClientProtocol, name: String) async throws -> String {
    let email = "\(name.lowercased())-\(UUID().uuidString.prefix(8).lowercased())@example.com"
    return try await client.execute(
        uri: "/api/v1/auth/dev", method: .post, headers: [.realIP: TestEnvironment.uniqueClientAddress()],
        body: ByteBuffer(string: #"{"email":"\#(email)","displayName":"\#(name)"}"#)
    ) { response in
        #expect(response.status == .ok)
        let json = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        return try #require((json?["data"] as? [String: Any])?["accessToken"] as? String)
    }
}

private struct DataOnly<Payload: Decodable>: Decodable { var data: Payload }

func decodeData<Payload: Decodable>(_ type: Payload.Type, _ response: TestResponse) throws -> Payload {
    try JSONCoding.decoder.decode(DataOnly<Payload>.self, from: Data(buffer: response.body)).data
}

func decodeError(_ response: TestResponse) throws -> ErrorEnvelope {
    try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
}

private func outboxMessageId(for communityId: UUID, in database: Database) async throws -> UUID {
    let rows = try await database.client.query(
        "SELECT id FROM outbox WHERE community_id = \(communityId) AND message_type = 'community.created'",
        logger: TestEnvironment.logger)
    for try await id in rows.decode(UUID.self) { return id }
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
