import APNsStandIn
import Crypto
import Foundation
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The production APNs provider against a local endpoint that answers as APNs does, over
/// HTTP/2 and TLS: what a push carries, what becomes of dead tokens and refusals, and how a
/// throttled push comes back through the queue's retry tiers without resending the rest.
@Suite struct PushTests {
    @Test func aPushCarriesTheAlertTheBadgeAndTheCollapseId() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let (phone, tablet) = (
                    try await harness.device(for: ada), try await harness.device(for: ada, environment: .production)
                )
                let event = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                #expect(
                    try await eventually {
                        harness.pushes(to: phone).count == 1 && harness.pushes(to: tablet).count == 1
                    })
                let first = try #require(harness.pushes(to: phone).first)
                #expect(first.status == 200 && first.pushType == "alert" && first.priority == "10")
                #expect(first.topic == SharedAPNs.topic && first.expiration != nil)
                #expect(first.collapseId == "event-\(event.id.lowercasedString)")
                let aps = try #require(first.json?["aps"]?.objectValue)
                #expect(aps["alert"]?["title"]?.stringValue == "New in \(club.name): Match")
                #expect(aps["badge"]?.numberValue == 1)
                #expect(aps["thread-id"]?.stringValue == club.id.lowercasedString)
                #expect(first.json?["data"]?["eventId"]?.stringValue == event.id.lowercasedString)
                #expect(first.json?["type"]?.stringValue == "event_created")

                // The provider token names our team and key, and is signed with our key.
                let jwt = try #require(first.authorization?.split(separator: " ").last.map(String.init))
                let parts = jwt.split(separator: ".").map(String.init)
                #expect(parts.count == 3)
                let header = try #require(Data(base64URLEncoded: parts[0]).flatMap(json))
                let claims = try #require(Data(base64URLEncoded: parts[1]).flatMap(json))
                #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == SharedAPNs.keyId)
                #expect(claims["iss"] as? String == SharedAPNs.teamId)

                // A change to the same event: the next push replaces it on the lock screen.
                _ = try await api.call(
                    .patch, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach,
                    json: #"{"startsAt":"2031-04-01T11:00:00Z"}"#)
                #expect(try await eventually { harness.pushes(to: phone).count == 2 })
                let second = try #require(harness.pushes(to: phone).last)
                #expect(second.collapseId == first.collapseId)
                #expect(second.json?["aps"]?["badge"]?.numberValue == 2)
                try await harness.drained()
                #expect(harness.pushes(to: tablet).count == 2)
            }
        }
    }

    @Test func deadTokensAreDroppedAndRefusalsAreFinal() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let unregistered = try await harness.device(for: ada)
                let bad = try await harness.device(for: ada)
                let refused = try await harness.device(for: ada)
                let reborn = try await harness.device(for: ada)
                harness.apns.script(unregistered, [.status(410, "Unregistered")])
                harness.apns.script(bad, [.status(400, "BadDeviceToken")])
                harness.apns.script(refused, [.status(400, "BadTopic")])
                // Dead an hour ago, registered again since: kept.
                harness.apns.script(reborn, [.status(410, "Unregistered", timestamp: Date().addingTimeInterval(-3600))])

                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                let all = [unregistered, bad, refused, reborn]
                #expect(try await eventually { all.allSatisfy { harness.pushes(to: $0).count == 1 } })
                try await harness.drained()
                let devices = try await harness.call(.get, "/api/v1/me/devices", as: ada).data([Device].self)
                #expect(Set(devices.map(\.token)) == [refused, reborn])
                // Nothing is sent again: every answer was final.
                #expect(all.allSatisfy { harness.pushes(to: $0).count == 1 })
                try await withTestDatabase { database in
                    let receipts = try await database.systemQuery(
                        """
                        SELECT r.status::int, r.reason FROM push_receipts r JOIN notifications n ON n.id = r.notification_id
                        WHERE n.user_id = \(ada.id) ORDER BY r.status, r.reason
                        """)
                    let answers = try receipts.map { try $0.decode((Int, String?).self) }
                    #expect(answers.map(\.0) == [400, 400, 410, 410])
                    #expect(
                        try await count(
                            "SELECT count(*)::int FROM notifications WHERE user_id = \(ada.id) AND push_at IS NOT NULL",
                            in: database) == 0)
                }
            }
        }
    }

    @Test func aThrottledPushComesBackThroughTheRetryTiersAlone() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let (throttled, fine) = (try await harness.device(for: ada), try await harness.device(for: ada))
                harness.apns.script(throttled, [.status(429, "TooManyRequests")])
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                // The first retry tier waits 5 seconds.
                #expect(try await eventually(timeout: .seconds(30)) { harness.pushes(to: throttled).count == 2 })
                #expect(harness.pushes(to: throttled).map(\.status) == [429, 200])
                #expect(harness.pushes(to: fine).map(\.status) == [200])
                try await withTestDatabase { database in
                    let settled = try await eventually {
                        try await count(
                            "SELECT count(*)::int FROM notifications WHERE user_id = \(ada.id) AND push_at IS NOT NULL",
                            in: database) == 0
                    }
                    #expect(settled)
                }
                try await harness.drained()
                #expect(harness.pushes(to: fine).count == 1)
            }
        }
    }

    @Test func anExpiredProviderTokenIsReplacedAtOnce() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let phone = try await harness.device(for: ada)
                harness.apns.script(phone, [.status(403, "ExpiredProviderToken")])
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                #expect(try await eventually { harness.pushes(to: phone).count == 2 })
                let pushes = harness.pushes(to: phone)
                #expect(pushes.map(\.status) == [403, 200])
                #expect(pushes.count == 2 && pushes.first?.authorization != pushes.last?.authorization)
            }
        }
    }

    /// A token APNs calls invalid (not expired) is a key problem re-signing will not cure, and
    /// re-signing on every push would trip APNs' limit on token updates: the push waits for
    /// the retry tiers instead.
    @Test func anInvalidProviderTokenWaitsForTheRetryTiers() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada) = try await api.clubWithOneMember()
                let phone = try await harness.device(for: ada)
                harness.apns.script(phone, [.status(403, "InvalidProviderToken")])
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                #expect(try await eventually { harness.pushes(to: phone).count == 1 })
                try await Task.sleep(for: .seconds(2))
                #expect(harness.pushes(to: phone).count == 1)
                #expect(try await eventually(timeout: .seconds(30)) { harness.pushes(to: phone).count == 2 })
                #expect(harness.pushes(to: phone).map(\.status) == [403, 200])
            }
        }
    }

    @Test func aTokenThatMovedOnDoesNotGetTheFormerOwnersNews() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, ada, ben) = (
                    try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
                )
                let club = try await api.community(by: coach)
                try await api.join(ada, club, invitedBy: coach)
                let phone = try await harness.device(for: ada)
                let body = #"{"token":"\#(phone)","environment":"sandbox","bundleId":"\#(SharedAPNs.topic)"}"#
                #expect(try await harness.call(.post, "/api/v1/me/devices", as: ben, json: body).status == .created)
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                #expect(try await harness.settled(ada, .eventCreated, count: 1))
                try await harness.drained()
                #expect(harness.pushes(to: phone).isEmpty)
            }
        }
    }

    /// A member with no device is owed no push: their row is written without one, so no push job
    /// is queued for them (and their unread count is not taken for a badge nobody sees). Sent
    /// pushes clear `push_at`; `push_queued` stays.
    @Test func aMemberWithoutADeviceIsOwedNoPush() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, club, ada, ben) = try await api.clubWithTwoMembers()
                let phone = try await harness.device(for: ben)
                _ = try await api.createEvent(
                    in: club, by: coach, #"{"title":"Match","startsAt":"2031-04-01T10:00:00Z"}"#)
                for person in [ada, ben] { #expect(try await harness.settled(person, .eventCreated, count: 1)) }
                #expect(try await eventually { harness.pushes(to: phone, of: "event_created").count == 1 })
                try await withTestDatabase { database in
                    let owed = try await database.systemQuery(
                        """
                        SELECT user_id FROM notifications
                        WHERE community_id = \(club.id) AND type = 'event_created' AND push_queued
                        """)
                    var users: [UUID] = []
                    for row in owed { users.append(try row.decode(UUID.self)) }
                    #expect(users == [ben.id])
                }
            }
        }
    }

    /// One token for every request until it is 50 minutes old (APNs refuses one older than an
    /// hour, and one refreshed more often than every 20 minutes); a discarded one is replaced.
    @Test func theProviderTokenIsReusedThenRefreshedBeforeAnHour() async throws {
        let key = P256.Signing.PrivateKey()
        let tokens = ProviderToken(key: key, keyId: "KEY1234567", teamId: "TEAM123456")
        let start = Date()
        let first = try await tokens.token(now: start)
        #expect(try await tokens.token(now: start.addingTimeInterval(49 * 60)) == first)
        let refreshed = try await tokens.token(now: start.addingTimeInterval(51 * 60))
        #expect(refreshed != first)
        tokens.discard(first)
        #expect(try await tokens.token(now: start.addingTimeInterval(52 * 60)) == refreshed)
        tokens.discard(refreshed)
        #expect(try await tokens.token(now: start.addingTimeInterval(53 * 60)) != refreshed)

        let parts = first.split(separator: ".").map(String.init)
        let signature = try P256.Signing.ECDSASignature(
            rawRepresentation: try #require(Data(base64URLEncoded: parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        let claims = try #require(Data(base64URLEncoded: parts[1]).flatMap(json))
        #expect(claims["iat"] as? Int == Int(start.timeIntervalSince1970))
    }
}

/// Each answer Apple documents, and what becomes of the push and the token.
@Test(arguments: [
    (200, "", "accepted"),
    (410, #"{"reason":"Unregistered","timestamp":1700000000000}"#, "drop since 1700000000"),
    (400, #"{"reason":"BadDeviceToken"}"#, "drop"),
    (400, #"{"reason":"DeviceTokenNotForTopic"}"#, "drop"),
    (400, #"{"reason":"BadCollapseId"}"#, "refused"),
    (413, #"{"reason":"PayloadTooLarge"}"#, "refused"),
    (403, #"{"reason":"BadCertificate"}"#, "refused"),
    (403, #"{"reason":"ExpiredProviderToken"}"#, "retry"),
    (403, #"{"reason":"InvalidProviderToken"}"#, "retry"),
    (429, #"{"reason":"TooManyRequests"}"#, "retry"),
    (500, #"{"reason":"InternalServerError"}"#, "retry"),
    (503, #"{"reason":"ServiceUnavailable"}"#, "retry"),
    (502, "<html>bad gateway</html>", "retry"),
])
func apnsAnswersDecideThePushAndTheToken(status: Int, body: String, expected: String) {
    let outcome = APNsAnswer.outcome(status: status, apnsId: "A", body: Array(body.utf8))
    let seen: String
    switch outcome {
    case .accepted: seen = "accepted"
    case .refused(_, _, true, let since?): seen = "drop since \(Int(since.timeIntervalSince1970))"
    case .refused(_, _, true, nil): seen = "drop"
    case .refused: seen = "refused"
    case .retry: seen = "retry"
    }
    #expect(seen == expected)
}

private func json(_ data: Data) -> [String: Any]? {
    try? JSONSerialization.jsonObject(with: data) as? [String: Any]
}
