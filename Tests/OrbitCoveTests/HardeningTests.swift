import Foundation
import HTTPTypes
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// What an attacker, an operator or a careless client tried against the API: each is a clear
/// `4xx` or the right outcome, never a crash, a `500` or a silent loss.
@Suite struct HardeningTests {
    static func cursor(_ text: String) -> String { Data(text.utf8).base64URLEncodedString() }

    @Test func outOfRangeAndMalformedCursorsAndLimitsAreTheClientsError() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let zero = "00000000-0000-4000-8000-000000000000"
            let cursors = [
                Self.cursor("9223372036854775807|\(zero)"), Self.cursor("-9223372036854775808|\(zero)"),
                Self.cursor("99999999999999999999|\(zero)"), Self.cursor("1|not-a-uuid"), Self.cursor("1|\(zero)|x"),
                "%%%", String(repeating: "A", count: 5000),
            ]
            for path in [
                "/api/v1/me/communities", "/api/v1/communities/\(club.id)/members",
                "/api/v1/communities/\(club.id)/audit", "/api/v1/me/family-members",
                "/api/v1/communities/\(club.id)/invites",
            ] {
                for cursor in cursors {
                    let reply = try await api.call(.get, "\(path)?cursor=\(cursor)", as: ada)
                    #expect(reply.status == .badRequest, "\(path) cursor \(cursor.prefix(40))")
                    #expect(reply.fieldErrors.keys.contains("cursor"))
                }
                for limit in ["0", "101", "-1", "9223372036854775808", "ten"] {
                    let reply = try await api.call(.get, "\(path)?limit=\(limit)", as: ada)
                    #expect(reply.status == .badRequest && reply.fieldErrors.keys.contains("limit"), "\(path) \(limit)")
                }
            }
            // The service is still there.
            #expect(try await api.call(.get, "/api/v1/me/communities", as: ada).status == .ok)
        }
    }

    @Test func textLimitsCountAsTheDatabaseCounts() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            // 60 flags: 60 characters, 120 code points; the column holds 100 code points.
            let flags = String(repeating: "🇩🇪", count: 60)
            let tooLong = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"displayName":"\#(flags)"}"#)
            #expect(tooLong.status == .badRequest && tooLong.fieldErrors.keys.contains("displayName"))
            let fits = String(repeating: "🇩🇪", count: 50)
            #expect(
                try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"displayName":"\#(fits)"}"#).status == .ok)
            let nul = try await api.call(.post, "/api/v1/communities", as: ada, json: #"{"name":"a\u0000b"}"#)
            #expect(nul.status == .badRequest && nul.fieldErrors.keys.contains("name"))
        }
    }

    /// A name or a title is one line: it heads a list row, a push notification, an ICS
    /// summary and a CSV cell, where a line break or another control character would start what
    /// looks like a line of its own ("Ada\nYour account is locked"). Ends are trimmed as before.
    @Test func namesAndTitlesAreOneLine() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            let dues = #""amount":5000,"currency":"EUR","dueDate":"2031-05-01","memberIds":["\#(ada.id)"]"#
            let poll = #""type":"poll","pollData":{"options":["a","b"],"#
            let routes: [(HTTPRequest.Method, String, (String) -> String, String)] = [
                (.patch, "/api/v1/me", { #"{"displayName":"\#($0)"}"# }, "displayName"),
                (.post, "/api/v1/communities", { #"{"name":"\#($0)"}"# }, "name"),
                (.patch, "/api/v1/communities/\(club.id)", { #"{"name":"\#($0)"}"# }, "name"),
                (.post, "/api/v1/me/family-members", { #"{"name":"\#($0)"}"# }, "name"),
                (
                    .post, "/api/v1/communities/\(club.id)/events",
                    { #"{"title":"\#($0)","startsAt":"2031-05-01T15:00:00Z"}"# }, "title"
                ),
                (
                    .post, "/api/v1/communities/\(club.id)/events",
                    { #"{"title":"Game","locationName":"\#($0)","startsAt":"2031-05-01T15:00:00Z"}"# },
                    "locationName"
                ),
                (.post, "/api/v1/communities/\(club.id)/dues", { #"{"name":"\#($0)",\#(dues)}"# }, "name"),
                (
                    .post, "/api/v1/communities/\(club.id)/posts", { #"{\#(poll)"question":"\#($0)"}}"# },
                    "pollData.question"
                ),
                (
                    .post, "/api/v1/communities/\(club.id)/posts",
                    { #"{"type":"poll","pollData":{"question":"Q","options":["a","\#($0)"]}}"# }, "pollData.options"
                ),
            ]
            for (method, path, body, field) in routes {
                for broken in [
                    #"Ada\nAdmin"#, #"Ada\r\nAdmin"#, #"Ada\tB"#, #"Ada\u0085B"#, "Ada\u{2028}B", #"Ada\u001bB"#,
                    #"Ada\u202eB"#, #"Ada\u202bB"#,
                ] {
                    let reply = try await api.call(method, path, as: ada, json: body(broken))
                    #expect(reply.status == .badRequest, "\(path) \(field) \(broken)")
                    #expect(reply.fieldErrors[field]?.contains("one line") == true, "\(path) \(field) \(broken)")
                }
                let fine = try await api.call(method, path, as: ada, json: body(#"  Ada & Bea  \n"#))
                #expect([.ok, .created].contains(fine.status), "\(path) \(field): \(fine.status)")
            }
            let me = try await api.call(.get, "/api/v1/me", as: ada).data(User.self)
            #expect(me.displayName == "Ada & Bea")
            // Signing in names its user and its device too.
            let device = try await api.auth.executeRequest(
                uri: "/api/v1/auth/dev", method: .post,
                headers: [.realIP: TestEnvironment.uniqueClientAddress(), .contentType: "application/json"],
                body: ByteBuffer(
                    string:
                        #"{"email":"eve-\#(UUID().uuidString.prefix(6))@example.com","displayName":"Eve","deviceName":"Eve's\tphone"}"#
                ))
            #expect(device.status == .badRequest)
            // A name a device's localisation wrapped in direction controls signs in, without them.
            let wrapped = try await api.auth.executeRequest(
                uri: "/api/v1/auth/dev", method: .post,
                headers: [.realIP: TestEnvironment.uniqueClientAddress(), .contentType: "application/json"],
                body: ByteBuffer(
                    string:
                        #"{"email":"eve-\#(UUID().uuidString.prefix(6))@example.com","displayName":"\u2068Eve\u2069","deviceName":"\u202bEve's phone\u202c"}"#
                ))
            #expect(wrapped.status == .ok || wrapped.status == .created, "\(wrapped.status)")
            #expect(String(decoding: wrapped.body.readableBytesView, as: UTF8.self).contains(#""displayName":"Eve""#))
            for name in [#"Eve\nAdmin"#, #"Eve\u0007"#] {
                let reply = try await api.auth.executeRequest(
                    uri: "/api/v1/auth/dev", method: .post,
                    headers: [.realIP: TestEnvironment.uniqueClientAddress(), .contentType: "application/json"],
                    body: ByteBuffer(
                        string: #"{"email":"eve-\#(UUID().uuidString.prefix(6))@example.com","displayName":"\#(name)"}"#
                    ))
                #expect(reply.status == .badRequest, "\(name)")
            }
        }
    }

    /// Bodies are read as the document writes them (the contract run found both): `null` only
    /// clears where a field can be cleared (PATCH), and a URL is a URL as sent.
    @Test func bodiesAreReadAsTheDocumentSays() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            for (path, body, field) in [
                ("/api/v1/communities", #"{"name":"Tigers","description":null}"#, "description"),
                ("/api/v1/communities", #"{"name":"Tigers","settings":null}"#, "settings"),
                ("/api/v1/communities", #"{"name":"Tigers","iconUrl":" https://x.io/a.png "}"#, "iconUrl"),
                ("/api/v1/communities", #"{"name":"Tigers","iconUrl":""}"#, "iconUrl"),
                // Found by the media issue's probe: stored as sent before.
                ("/api/v1/communities", #"{"name":"Tigers","iconUrl":"https://x.io/a\n.png"}"#, "iconUrl"),
                ("/api/v1/communities", #"{"name":"Tigers","iconUrl":"https://x.io/a b.png"}"#, "iconUrl"),
                ("/api/v1/communities", #"{"name":"Tigers","iconUrl":"https://user:pass@x.io/a.png"}"#, "iconUrl"),
                ("/api/v1/me/family-members", #"{"name":"Kid","avatarUrl":null}"#, "avatarUrl"),
            ] {
                let reply = try await api.call(.post, path, as: ada, json: body)
                #expect(reply.status == .badRequest && reply.fieldErrors.keys.contains(field), "\(body)")
            }
            let club = try await api.community(by: ada)
            let invite = try await api.call(
                .post, "/api/v1/communities/\(club.id)/invites", as: ada, json: #"{"maxUses":null}"#)
            #expect(invite.status == .badRequest && invite.fieldErrors.keys.contains("maxUses"))
            // Where null means "clear", it still does.
            let cleared = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":null}"#)
            #expect(cleared.status == .ok)
        }
    }

    /// A body is JSON (RFC 8259), sent as it is (both found by hostile probes): a
    /// trailing comma is not JSON, whatever a lenient parser makes of it, and a body declaring a
    /// content coding is refused rather than read as if it had none (nothing here decodes one,
    /// RFC 9110 §8.4.1), saying which coding it takes (RFC 7694).
    @Test func bodiesAreStrictJSONWithoutAContentCoding() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            for body in [
                #"{"name":"Tigers",}"#, #"{"name":"Tigers" , }"#,
                #"{"name":"Tigers","settings":{"simplifyDebts":true,}}"#,
                #"{"name":"Tigers","settings":{"duesReminderDays":[1,2,]}}"#,
                #"{"name":"Tigers","settings":{"duesReminderDays":[,]}}"#,
            ] {
                let reply = try await api.call(.post, "/api/v1/communities", as: ada, json: body)
                #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(body)")
                #expect(reply.fieldErrors["body"] == "is not valid JSON", "\(body): \(reply.fieldErrors)")
            }
            // A body of `null` is named as the body (a hostile probe's: the field was "").
            let null = try await api.call(.post, "/api/v1/communities", as: ada, json: "null")
            #expect(null.status == .badRequest && null.fieldErrors == ["body": "must be an object"])
            // Commas inside strings are text.
            let named = try await api.call(
                .post, "/api/v1/communities", as: ada,
                json: #"{"name":"Tigers, ]}","settings":{"duesReminderDays":[1,2]}}"#)
            #expect(named.status == .created, "\(named.status)")
            for coding in ["gzip", "br", "deflate", "gzip, identity", "x-bogus"] {
                let reply = try await api.call(
                    .post, "/api/v1/communities", as: ada, json: #"{"name":"Tigers"}"#,
                    headers: [.contentEncoding: coding])
                #expect(
                    reply.status == .unsupportedMediaType && reply.errorCode == "UNSUPPORTED_MEDIA_TYPE", "\(coding)")
                #expect(reply.headers[.acceptEncoding] == "identity", "\(coding)")
            }
            for coding in ["identity", "Identity"] {
                let reply = try await api.call(
                    .post, "/api/v1/communities", as: ada, json: #"{"name":"Tigers"}"#,
                    headers: [.contentEncoding: coding])
                #expect(reply.status == .created, "\(coding): \(reply.status)")
            }
        }
    }

    @Test func idsAreLowerCaseInBodiesAndHeadersAndAcceptedInEitherCase() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let created = try await api.call(.post, "/api/v1/communities", as: ada, json: #"{"name":"Tigers"}"#)
            let id = try #require((created.json?["data"] as? [String: Any])?["id"] as? String)
            #expect(id == id.lowercased())
            #expect(created.headers[.location] == "/api/v1/communities/\(id)")
            let upper = try await api.call(.get, "/api/v1/communities/\(id.uppercased())", as: ada)
            #expect(upper.status == .ok)
            #expect((upper.json?["data"] as? [String: Any])?["createdBy"] as? String == ada.id.lowercasedString)
        }
    }

    /// Two admins changing different settings at once both keep their change: the write merges
    /// the keys a request names into what is stored, not into the copy the request read.
    @Test func aSettingsChangeKeepsAConcurrentChangeToAnotherSetting() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: ada)
            // Warm the cache, then let "another admin" change a setting behind it.
            #expect(try await api.call(.get, "/api/v1/communities/\(club.id)", as: ada).status == .ok)
            try await withTestDatabase { database in
                try await database.systemQuery(
                    """
                    UPDATE communities SET settings = settings || '{"allowMemberPosts": false}'::jsonb
                    WHERE id = \(club.id)
                    """)
            }
            let patch = #"{"settings":{"timezone":"Europe/Berlin"}}"#
            let changed = try await api.call(.patch, "/api/v1/communities/\(club.id)", as: ada, json: patch)
                .data(Community.self)
            #expect(changed.settings.timezone == "Europe/Berlin")
            #expect(changed.settings.allowMemberPosts == false)
        }
    }

    @Test func aRemovedMemberNeedsAnAdminToComeBack() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            try await api.join(ben, club, invitedBy: ada)
            #expect(
                try await api.call(.delete, "/api/v1/communities/\(club.id)/members/\(ben.id)", as: ada).status
                    == .noContent)
            let invite = try await api.call(.post, "/api/v1/communities/\(club.id)/invites", as: ada, json: "{}")
                .data(Invite.self)
            let refused = try await api.call(.post, "/api/v1/invites/\(invite.code)/join", as: ben)
            #expect(refused.status == .forbidden && refused.errorCode == "REMOVED_FROM_COMMUNITY")
            // Members who only left come back with any live code; readmitting is for admins.
            let readmitPath = "/api/v1/communities/\(club.id)/members/\(ben.id)/readmit"
            #expect(try await api.call(.post, readmitPath, as: ada).status == .noContent)
            #expect(try await api.call(.post, readmitPath, as: ada).errorCode == "MEMBER_NOT_REMOVED")
            #expect(try await api.call(.post, "/api/v1/invites/\(invite.code)/join", as: ben).status == .created)
        }
    }

    @Test func aProfileChangeReachesIncrementalSync() async throws {
        try await CoreHarness.run { api in
            let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
            let club = try await api.community(by: ada)
            try await api.join(ben, club, invitedBy: ada)
            let token = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: ada)
                .data(CommunitySync.self).syncToken
            #expect(
                try await api.call(.patch, "/api/v1/me", as: ben, json: #"{"displayName":"Benjamin"}"#).status == .ok)
            let changes = try await api.call(.get, "/api/v1/communities/\(club.id)/sync?since=\(token)", as: ada)
                .data(CommunitySync.self)
            #expect(changes.members.updated.map(\.displayName) == ["Benjamin"])
        }
    }

    @Test(
        arguments: [
            ("10.0.0.1", "203.0.113.9", "203.0.113.9"),  // through the gateway
            ("198.51.100.7", "203.0.113.9", "198.51.100.7"),  // a client claiming an address
            ("10.0.0.1", nil, "10.0.0.1"),  // the gateway itself, no header
            ("10.0.0.1", "", "10.0.0.1"),
            ("172.18.0.5", "203.0.113.9", "203.0.113.9"),  // a gateway container, named by its range
            ("172.32.0.5", "203.0.113.9", "172.32.0.5"),  // just outside 172.16.0.0/12
            ("fd00::7", "2001:db8::1", "2001:db8::1"),
        ] as [(String, String?, String)])
    func aForwardedAddressIsBelievedOnlyFromATrustedProxy(peer: String, forwarded: String?, client: String) throws {
        let trusted = try TrustedProxies(["10.0.0.1", "172.16.0.0/12", "fd00::/8"])
        let resolved = AppRequestContext.clientAddress(peer: peer, forwarded: forwarded, trustedProxies: trusted)
        #expect(resolved == client)
    }

    @Test func malformedTrustedProxiesStopStartUp() {
        #expect(throws: ConfigurationError.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: ConfigurationError.self) { try TrustedProxies(["gateway"]) }
    }
}
