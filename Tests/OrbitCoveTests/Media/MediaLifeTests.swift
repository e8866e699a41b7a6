import Crypto
import Foundation
import HTTPTypes
import MediaService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A media row's life at its edges: what may name it (by purpose), what a member may write of it
/// in SQL, two PUTs of one URL at once, an upload whose processing never finished, and the
/// redirects a client caches.
@Suite struct MediaLifeTests {
    /// Runs `body`, which the database must refuse with `state` (and `constraint`, if given).
    static func refused(
        _ state: String, _ constraint: String? = nil, _ body: () async throws -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await body()
            Issue.record("not refused", sourceLocation: sourceLocation)
        } catch let error as PSQLError {
            #expect(
                error.serverInfo?[.sqlState] == state, "\(String(reflecting: error))", sourceLocation: sourceLocation)
            if let constraint {
                #expect(error.serverInfo?[.constraintName] == constraint, sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("refused with \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func aPostNamesOnlyPhotosAndKeepsOneDeletedSince() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let png = try MediaTests.fixture("photo.png")
            let photo = try await harness.upload(png, as: ada, in: club, type: MediaType.png)
            let receipt = try await harness.upload(png, as: ada, in: club, type: MediaType.png, purpose: .receipt)
            let posts = "/api/v1/communities/\(club.id)/posts"

            // A receipt is not a post's photo, nor a photo a receipt.
            let misnamed = try await api.call(
                .post, posts, as: ada, json: #"{"type":"photo","mediaIds":["\#(receipt.id)"]}"#)
            #expect(misnamed.status == .badRequest && misnamed.fieldErrors["mediaIds"] != nil)
            let expense =
                #"{"description":"Balls","totalAmount":3000,"currency":"EUR","split":{"method":"equal","members":[{"userId":"\#(ada.id)"}]},"receiptMediaId":"\#(photo.id)"}"#
            let misfiled = try await api.call(
                .post, "/api/v1/communities/\(club.id)/transactions", as: ada, json: expense)
            #expect(misfiled.status == .badRequest && misfiled.fieldErrors["receiptMediaId"] != nil)
            // The database says the same to a member writing SQL.
            let entry = try await api.call(
                .post, "/api/v1/communities/\(club.id)/transactions", as: ada,
                json: expense.replacingOccurrences(of: "\(photo.id)", with: "\(receipt.id)"))
            #expect(entry.status == .created)
            let entryId = try entry.data(LedgerTransaction.self).id
            try await withTestDatabase { db in
                await Self.refused("23503", "posts_media_ids") {
                    _ = try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            """
                            INSERT INTO posts (community_id, author_id, type, media_ids)
                            VALUES (\(club.id), \(ada.id), 'photo', ARRAY[\(receipt.id)]::uuid[])
                            """, logger: TestEnvironment.logger)
                    }
                }
                await Self.refused("23503", "transactions_receipt_media") {
                    _ = try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            "UPDATE transactions SET receipt_media_id = \(photo.id) WHERE id = \(entryId)",
                            logger: TestEnvironment.logger)
                    }
                }
            }

            // A post whose photo is deleted later can still be edited: only what an edit adds is checked.
            let created = try await api.call(
                .post, posts, as: ada, json: #"{"type":"photo","content":"Kick-off","mediaIds":["\#(photo.id)"]}"#)
            #expect(created.status == .created)
            let post = try created.data(Post.self)
            #expect(try await harness.call(.delete, "/api/v1/media/\(photo.id)", as: ada).status == .noContent)
            let edited = try await api.call(.patch, "\(posts)/\(post.id)", as: ada, json: #"{"content":"Full time"}"#)
            #expect(edited.status == .ok, "\(edited.status) \(edited.errorCode ?? "")")
            #expect(try edited.data(Post.self).mediaIds == [photo.id])
        }
    }

    /// A member writing SQL may create only what an upload request makes: a pending row with its
    /// own upload key, nothing processed, no variants naming other files (which the sweep would
    /// remove).
    @Test func aMemberInsertsOnlyWhatAnUploadRequestMakes() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let victim = try await harness.upload(
                try MediaTests.fixture("photo.png"), as: coach, in: club, type: MediaType.png)
            let victimKey = MediaKeys.variant(victim.id, "thumb.jpg")
            try await withTestDatabase { db in
                func insert(
                    _ columns: String, _ values: String, expires: String = "now() + interval '1 hour'"
                ) async throws {
                    let id = UUID()
                    try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            PostgresQuery(
                                unsafeSQL: """
                                    INSERT INTO media (id, community_id, uploaded_by, type, filename, mime_type, size_bytes,
                                                       purpose, checksum, upload_expires_at, storage_path\(columns))
                                    VALUES ('\(id)', '\(club.id)', '\(ada.id)', 'image', 'a.png', 'image/png', 10, 'post',
                                            decode(repeat('ab', 32), 'hex'), \(expires),
                                            \(values.replacingOccurrences(of: "uploads/ID", with: "uploads/\(id.lowercasedString)")))
                                    """), logger: TestEnvironment.logger)
                    }
                }
                // What an upload request makes is accepted, so each refusal below is for its one difference.
                try await insert("", "'uploads/ID'")
                for (columns, values) in [
                    (", variants", "'uploads/ID', '{\"thumb/jpeg\":{\"key\":\"\(victimKey)\"}}'::jsonb"),
                    ("", "'\(victimKey)'"),
                    (", status, uploaded_at", "'uploads/ID', 'uploaded', now()"),
                    (", thumbnail_path", "'uploads/ID', '\(victimKey)'"),
                ] {
                    await #expect(throws: (any Error).self, "\(columns)") {
                        try await insert(columns, values)
                    }
                }
                // A pending row that outlives every upload URL (the sweep would keep it forever).
                await #expect(throws: (any Error).self) {
                    try await insert("", "'uploads/ID'", expires: "now() + interval '1 year'")
                }
            }
            // The victim is served as before.
            let served = try await harness.follow(
                try await harness.call(.get, "/api/v1/media/\(victim.id)?variant=thumb", as: coach))
            #expect(served.status == .ok)
        }
    }

    @Test func twoPutsOfOneURLAtOnceCompleteItOnce() async throws {
        try await MediaHarness.run { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try MediaTests.fixture("photo.png")
            for _ in 0..<3 {
                let upload = try await harness.ask(photo, as: coach, in: club, type: MediaType.png)
                    .data(MediaUpload.self)
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<4 { group.addTask { try await harness.send(upload.upload, photo).status } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == .created }.count == 1, "\(statuses)")
                #expect(statuses.filter { $0 == .conflict }.count == 3, "\(statuses)")
                #expect(try await harness.processed(upload.media.id, as: coach).status == .ready)
                // One job was queued for it, not one per PUT.
                let queued = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { db in
                    try await db.transaction(scope: nil) { connection in
                        let rows = try await connection.query(
                            """
                            SELECT count(*)::int FROM outbox
                            WHERE lower(data ->> 'mediaId') = \(upload.media.id.lowercasedString)
                              AND message_type = 'media.uploaded'
                            """, logger: TestEnvironment.logger)
                        for try await count in rows.decode(Int.self) { return count }
                        return -1
                    }
                }
                #expect(queued == 1)
            }
        }
    }

    /// An upload whose job never finished (dead-lettered, say) fails after a day, so no row
    /// waits forever, and its file goes.
    @Test func anUploadNeverProcessedFailsAfterADay() async throws {
        try await MediaHarness.run(media: ["ORBITCOVE_MEDIA_SWEEP_SECONDS": "1"]) { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try MediaTests.fixture("photo.png")
            let upload = try await harness.ask(photo, as: coach, in: club, type: MediaType.png).data(MediaUpload.self)
            let id = upload.media.id
            // As if the bytes arrived 25 hours ago and the job was lost (written as the system,
            // as the media service writes it, with no job queued).
            let file = URL(fileURLWithPath: MediaHarness.directory).appendingPathComponent(MediaKeys.upload(id))
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try photo.write(to: file)
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE media SET status = 'uploaded', uploaded_at = now() - interval '25 hours' WHERE id = \(id)",
                        logger: TestEnvironment.logger)
                }
            }
            let media = try await harness.processed(id, as: coach)
            #expect(media.status == .failed && media.failureReason == "processing did not finish")
            let reply = try await harness.call(.get, "/api/v1/media/\(id)", as: coach)
            #expect(reply.status == .unprocessableContent && reply.errorCode == "MEDIA_FAILED")
            #expect(try await eventually { !FileManager.default.fileExists(atPath: file.path) })
            // A recent upload is left to its worker.
            let recent = try await harness.upload(photo, as: coach, in: club, type: MediaType.png)
            #expect(recent.status == .ready)
        }
    }

    /// An account deleted after its grace period takes its avatar upload with it.
    @Test func aDeletedAccountsAvatarUploadGoes() async throws {
        try await MediaHarness.run(core: ["ORBITCOVE_CORE_RETENTION_INTERVAL_SECONDS": "1"]) { harness in
            let ada = try await harness.api.signIn("Ada")
            let avatar = try await harness.upload(
                try MediaTests.fixture("photo.png"), as: ada, in: nil, type: MediaType.png, purpose: .avatar)
            let set = try await harness.api.call(
                .patch, "/api/v1/me", as: ada, json: #"{"avatarMediaId":"\#(avatar.id)"}"#)
            #expect(set.status == .ok)
            #expect(try await harness.api.call(.delete, "/api/v1/me", as: ada).status == .accepted)
            try await withTestDatabase { db in
                try await db.transaction(scope: .system) { connection in
                    try await connection.query(
                        "UPDATE users SET deletion_requested_at = now() - interval '8 days' WHERE id = \(ada.id)",
                        logger: TestEnvironment.logger)
                }
                let gone = try await eventually {
                    try await db.transaction(scope: .system) { connection in
                        let rows = try await connection.query(
                            """
                            SELECT count(*)::int FROM users u
                            WHERE u.id = \(ada.id) AND u.deleted_at IS NOT NULL
                              AND u.avatar_media_id IS NULL AND u.avatar_url IS NULL
                              -- Deleted, or removed already by a sweep (another test's runs every second).
                              AND NOT EXISTS (SELECT 1 FROM media m WHERE m.id = \(avatar.id) AND m.deleted_at IS NULL)
                            """, logger: TestEnvironment.logger)
                        for try await count in rows.decode(Int.self) { return count == 1 }
                        return false
                    }
                }
                #expect(gone)
            }
        }
    }

    /// Redirects within one step of the signed URL's life are the same URL with the same tag (a
    /// client's cache keeps one copy), and the cache keeps it no longer than the URL lives.
    @Test func redirectsAreStableAndCachedNoLongerThanTheyLive() async throws {
        try await MediaHarness.run(media: ["ORBITCOVE_MEDIA_DOWNLOAD_SECONDS": "600"]) { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let media = try await harness.upload(
                try MediaTests.fixture("photo.png"), as: coach, in: club, type: MediaType.png)
            let path = "/api/v1/media/\(media.id)?variant=large"
            // Read before the redirect is made and after it: a busy machine may run the test seconds later.
            var before = Int(Date().timeIntervalSince1970)
            var first = try await harness.call(.get, path, as: coach)
            var second = try await harness.call(.get, path, as: coach)
            if first.headers[.eTag] != second.headers[.eTag] {
                // The two straddled a step's edge; the next two cannot.
                before = Int(Date().timeIntervalSince1970)
                first = try await harness.call(.get, path, as: coach)
                second = try await harness.call(.get, path, as: coach)
            }
            #expect(first.status == .found)
            #expect(first.headers[.location] == second.headers[.location])
            #expect(first.headers[.eTag] == second.headers[.eTag])
            let location = try #require(first.headers[.location])
            let expires = try #require(
                URLComponents(string: location)?.queryItems?.first { $0.name == "expires" }?.value.flatMap { Int($0) })
            let maxAge = try #require(
                first.headers[.cacheControl]?.split(separator: "=").last.flatMap { Int($0) })
            // Lives at least half its life, at most its life and a half; cached a minute less than it
            // lives (the second's slack: the service's clock read rounds differently).
            let after = Int(Date().timeIntervalSince1970)
            #expect(expires - before >= 300 && expires - after <= 900, "\(expires - before), \(expires - after)")
            #expect(maxAge > 0 && maxAge <= expires - before - 59, "\(maxAge) for \(expires - before)")
            #expect(try await harness.follow(first).status == .ok)
        }
    }

    /// An avatar and a community's icon may be uploads: named by id, shown wherever the
    /// picture's URL is (its address), cleared when the upload is deleted, in the cached member
    /// lists and community row too.
    @Test func anAvatarAndAnIconMayBeUploads() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let other = try await api.community(by: ada)
            let png = try MediaTests.fixture("photo.png")
            let members = "/api/v1/communities/\(club.id)/members"
            func avatarShown(to person: CoreHarness.Person) async throws -> String? {
                try await api.call(.get, members, as: person).page(CommunityMember.self).items
                    .first { $0.userId == ada.id }?.avatarUrl
            }
            // Read once so the member list is cached before each change.
            #expect(try await avatarShown(to: coach) == nil)

            let avatar = try await harness.upload(png, as: ada, in: nil, type: MediaType.png, purpose: .avatar)
            let set = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarMediaId":"\#(avatar.id)"}"#)
            #expect(set.status == .ok)
            let user = try set.data(User.self)
            #expect(user.avatarMediaId == avatar.id)
            let address = try #require(user.avatarUrl)
            #expect(address.hasSuffix("/api/v1/media/\(avatar.id.lowercasedString)?variant=thumb"), "\(address)")
            #expect(try await avatarShown(to: coach) == address)
            // The address serves the avatar to a fellow member.
            let path = MediaHarness.path(of: address)
            #expect(try await harness.call(.get, path, as: coach).status == .found)

            // Not an avatar of hers, or both ways at once: refused, naming the field.
            let photo = try await harness.upload(png, as: ada, in: club, type: MediaType.png)
            let coachs = try await harness.upload(png, as: coach, in: nil, type: MediaType.png, purpose: .avatar)
            for json in [
                #"{"avatarMediaId":"\#(photo.id)"}"#, #"{"avatarMediaId":"\#(coachs.id)"}"#,
                #"{"avatarMediaId":"\#(UUID())"}"#, #"{"avatarMediaId":"nope"}"#,
                #"{"avatarMediaId":"\#(avatar.id)","avatarUrl":"https://example.com/a.png"}"#,
            ] {
                let reply = try await api.call(.patch, "/api/v1/me", as: ada, json: json)
                #expect(reply.status == .badRequest && reply.fieldErrors["avatarMediaId"] != nil, "\(json)")
            }
            // The database refuses it to SQL as well.
            try await withTestDatabase { db in
                await Self.refused("23503", "users_avatar_media") {
                    _ = try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            "UPDATE users SET avatar_media_id = \(coachs.id) WHERE id = \(ada.id)",
                            logger: TestEnvironment.logger)
                    }
                }
            }

            // A URL replaces the upload; the upload again, then deleted: no avatar, in the cached list too.
            let url = try await api.call(
                .patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":"https://example.com/a.png"}"#
            ).data(User.self)
            #expect(url.avatarMediaId == nil && url.avatarUrl == "https://example.com/a.png")
            // Clearing an upload that is not the avatar leaves the URL.
            let kept = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarMediaId":null}"#)
                .data(User.self)
            #expect(kept.avatarUrl == "https://example.com/a.png")
            _ = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarMediaId":"\#(avatar.id)"}"#)
            #expect(try await avatarShown(to: coach) == address)
            #expect(try await harness.call(.delete, "/api/v1/media/\(avatar.id)", as: ada).status == .noContent)
            let after = try await api.call(.get, "/api/v1/me", as: ada).data(User.self)
            #expect(after.avatarMediaId == nil && after.avatarUrl == nil)
            #expect(try await avatarShown(to: coach) == nil)

            // An icon: the community's own upload, set by an admin.
            let icon = try await harness.upload(png, as: coach, in: club, type: MediaType.png, purpose: .communityIcon)
            let foreign = try await harness.upload(
                png, as: ada, in: other, type: MediaType.png, purpose: .communityIcon)
            let community = "/api/v1/communities/\(club.id)"
            for id in [foreign.id, photo.id] {
                let reply = try await api.call(.patch, community, as: coach, json: #"{"iconMediaId":"\#(id)"}"#)
                #expect(reply.status == .badRequest && reply.fieldErrors["iconMediaId"] != nil)
            }
            let changed = try await api.call(.patch, community, as: coach, json: #"{"iconMediaId":"\#(icon.id)"}"#)
                .data(Community.self)
            #expect(changed.iconMediaId == icon.id)
            #expect(changed.iconUrl?.hasSuffix("/api/v1/media/\(icon.id.lowercasedString)?variant=thumb") == true)
            // An icon is the community's public face (invite previews show it): anyone signed in
            // may follow its address; a member's photo stays the members'.
            let stranger = try await api.signIn("Eve")
            #expect(
                try await harness.call(.get, "/api/v1/media/\(icon.id)?variant=thumb", as: stranger).status == .found)
            #expect(try await harness.call(.get, "/api/v1/media/\(photo.id)", as: stranger).status == .notFound)
            #expect(try await harness.call(.delete, "/api/v1/media/\(icon.id)", as: stranger).status != .noContent)
            // Read by a member (and so cached), then the icon is deleted: gone from the row at once.
            #expect(try await api.call(.get, community, as: ada).data(Community.self).iconMediaId == icon.id)
            #expect(try await harness.call(.delete, "/api/v1/media/\(icon.id)", as: coach).status == .noContent)
            let plain = try await api.call(.get, community, as: ada).data(Community.self)
            #expect(plain.iconMediaId == nil && plain.iconUrl == nil)
            // Clearing the upload clears the address it wrote. An icon upload is public only
            // while it is the community's icon.
            let icon2 = try await harness.upload(png, as: coach, in: club, type: MediaType.png, purpose: .communityIcon)
            let icon2Path = "/api/v1/media/\(icon2.id)/details"
            #expect(try await harness.call(.get, icon2Path, as: stranger).status == .notFound)
            _ = try await api.call(.patch, community, as: coach, json: #"{"iconMediaId":"\#(icon2.id)"}"#)
            #expect(try await harness.call(.get, icon2Path, as: stranger).status == .ok)
            let cleared = try await api.call(.patch, community, as: coach, json: #"{"clear":["iconMediaId"]}"#)
                .data(Community.self)
            #expect(cleared.iconMediaId == nil && cleared.iconUrl == nil)
            #expect(try await harness.call(.get, icon2Path, as: stranger).status == .notFound)
            // Only an admin makes an icon upload, through the API and in SQL.
            let asked = try await harness.ask(png, as: ada, in: club, type: MediaType.png, purpose: .communityIcon)
            #expect(asked.status == .forbidden)
            try await withTestDatabase { db in
                await #expect(throws: (any Error).self) {
                    _ = try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            """
                            INSERT INTO media (id, community_id, uploaded_by, type, filename, mime_type, size_bytes,
                                               purpose, checksum, upload_expires_at, storage_path)
                            SELECT i, \(club.id), \(ada.id), 'image', 'a.png', 'image/png', 10, 'community_icon',
                                   decode(repeat('ab', 32), 'hex'), now() + interval '1 hour', 'uploads/' || i::text
                            FROM (SELECT gen_random_uuid() AS i) AS fresh
                            """, logger: TestEnvironment.logger)
                    }
                }
            }
        }
    }
}
