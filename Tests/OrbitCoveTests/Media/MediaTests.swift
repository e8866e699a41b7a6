import Crypto
import Foundation
import HTTPTypes
import MediaService
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Uploads through signed URLs, processing by the worker, serving to members only, and
/// deletion, against the real servers, with files of every kind the issue names
/// (`Fixtures/`, made by `scripts/media/make_fixtures.sh`).
@Suite struct MediaTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: fixtures.appendingPathComponent(name))
    }

    /// Whether `bytes` carry any metadata block a photo can leak: EXIF (and its GPS), XMP, IPTC.
    static func metadataMarkers(in bytes: Data) -> [String] {
        let markers = ["Exif\0\0", "http://ns.adobe.com/xap", "Photoshop 3.0", "GPS", "iCCP", "tEXt", "eXIf"]
        return markers.filter { bytes.range(of: Data($0.utf8)) != nil }
    }

    @Test func aPhotoIsTurnedUprightStrippedAndServedToMembersOnly() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada, stranger) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Eve")
            )
            let club = try await api.club(of: coach, with: [ada])
            let photo = try Self.fixture("portrait-exif6.jpg")
            // The fixture is stored 640×480 with orientation 6 (shown turned a quarter) and carries GPS.
            #expect(!Self.metadataMarkers(in: photo).isEmpty)
            let media = try await harness.upload(photo, as: ada, in: club, type: MediaType.jpeg)
            #expect(media.status == .ready)
            #expect(media.width == 480 && media.height == 640)
            #expect(media.variants == [.thumb, .large, .original])

            // Renditions are so many pixels wide, never enlarged: the upright photo is 480 wide.
            for (variant, width) in [("thumb", 200), ("large", 480), ("original", 480)] {
                for format in ["jpeg", "webp"] where variant != "original" || format == "jpeg" {
                    let redirect = try await harness.call(
                        .get, "/api/v1/media/\(media.id)?variant=\(variant)&format=\(format)", as: coach)
                    #expect(redirect.status == .found, "\(variant) \(format)")
                    let served = try await harness.follow(redirect)
                    #expect(served.status == .ok)
                    #expect(served.headers[.contentType] == "image/\(format)")
                    #expect(served.headers[.contentTypeOptions] == "nosniff")
                    #expect(Self.metadataMarkers(in: served.body) == [], "\(variant) \(format)")
                    let header = try #require(try? VipsProbe.size(of: served.body))
                    // Upright: a third taller than wide.
                    #expect(
                        header.width == width && abs(header.height - width * 4 / 3) <= 1,
                        "\(variant) \(format): \(header)")
                }
            }

            // A conditional GET with the tag answers 304; the redirect carries cache headers.
            let first = try await harness.call(.get, "/api/v1/media/\(media.id)?variant=thumb", as: ada)
            let tag = try #require(first.headers[.eTag])
            #expect(first.headers[.cacheControl]?.hasPrefix("private") == true)
            let again = try await harness.call(
                .get, "/api/v1/media/\(media.id)?variant=thumb", as: ada, headers: [.ifNoneMatch: tag])
            #expect(again.status == .notModified)

            // Outside the community: not found, whatever is asked.
            for path in ["/api/v1/media/\(media.id)", "/api/v1/media/\(media.id)/details"] {
                let reply = try await harness.call(.get, path, as: stranger)
                #expect(reply.status == .notFound && reply.errorCode == "MEDIA_NOT_FOUND")
            }
            let refused = try await harness.call(.delete, "/api/v1/media/\(media.id)", as: stranger)
            #expect(refused.status == .notFound)
            // A member who did not upload it may not delete it; the uploader may.
            #expect(try await harness.call(.delete, "/api/v1/media/\(media.id)", as: coach).status == .noContent)
            #expect(try await harness.call(.get, "/api/v1/media/\(media.id)", as: ada).status == .notFound)
        }
    }

    @Test func onlyTheUploaderOrAnAdminDeletes() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada, bo) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Bo")
            )
            let club = try await api.club(of: coach, with: [ada, bo])
            let media = try await harness.upload(
                try Self.fixture("photo.png"), as: ada, in: club, type: MediaType.png)
            let denied = try await harness.call(.delete, "/api/v1/media/\(media.id)", as: bo)
            #expect(denied.status == .forbidden)
            #expect(try await harness.call(.delete, "/api/v1/media/\(media.id)", as: ada).status == .noContent)
        }
    }

    /// Every kind of file the issue names: each is ready as what its bytes are, or failed with
    /// a reason, and the worker goes on to the next.
    @Test(arguments: [
        ("photo.png", MediaType.png, MediaStatus.ready, ""),
        ("photo.webp", MediaType.webp, .ready, ""),
        ("animated.gif", MediaType.gif, .ready, ""),
        ("photo.heic", MediaType.heic, .ready, ""),
        ("cmyk.jpg", MediaType.jpeg, .ready, ""),
        ("p3.jpg", MediaType.jpeg, .ready, ""),
        ("polyglot.jpg", MediaType.jpeg, .ready, ""),
        ("pdf-as.jpg", MediaType.jpeg, .failed, "declared as image/jpeg but the file is application/pdf"),
        ("truncated.jpg", MediaType.jpeg, .failed, "could not be decoded"),
        ("bomb.png", MediaType.png, .failed, "14000×14000 pixels"),
        ("huge-dims.jpg", MediaType.jpeg, .failed, "pixels"),
        ("tiff.tif", MediaType.jpeg, .failed, "is not a JPEG, PNG, HEIC, WebP, GIF or PDF"),
        ("svg.svg", MediaType.png, .failed, "is not a JPEG, PNG, HEIC, WebP, GIF or PDF"),
        // A GIF with a script inside is decoded as the image it also is, and re-encoded without it.
        ("polyglot.gif", MediaType.gif, .ready, ""),
    ])
    func eachKindOfFileIsProcessedOrFailsWithAReason(
        _ name: String, _ type: String, _ status: MediaStatus, _ reason: String
    ) async throws {
        try await MediaHarness.run { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let media = try await harness.upload(try Self.fixture(name), as: coach, in: club, type: type)
            #expect(media.status == status, "\(name): \(media.failureReason ?? "")")
            if status == .failed {
                #expect(media.failureReason?.contains(reason) == true, "\(name): \(media.failureReason ?? "")")
                let reply = try await harness.call(.get, "/api/v1/media/\(media.id)", as: coach)
                #expect(reply.status == .unprocessableContent && reply.errorCode == "MEDIA_FAILED")
                // It never shows, so no post shows it (a hostile probe's: a photo post of it was made).
                let post = try await harness.api.call(
                    .post, "/api/v1/communities/\(club.id)/posts", as: coach,
                    json: #"{"type":"photo","mediaIds":["\#(media.id)"]}"#)
                #expect(post.status == .badRequest && post.fieldErrors["mediaIds"] != nil, "\(name): \(post.status)")
            } else {
                let served = try await harness.follow(
                    try await harness.call(.get, "/api/v1/media/\(media.id)?variant=large", as: coach))
                #expect(served.status == .ok)
                #expect(Self.metadataMarkers(in: served.body) == [], "\(name)")
                // Whatever rode along after the image (a script, an archive) is not served.
                for payload in ["<script", "PK\u{3}\u{4}", "<html"] {
                    #expect(served.body.range(of: Data(payload.utf8)) == nil, "\(name): \(payload)")
                }
            }
        }
    }

    @Test func aReceiptMayBeAPDFAndAPostMayNot() async throws {
        try await MediaHarness.run { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let pdf = try Self.fixture("receipt.pdf")
            let refused = try await harness.ask(pdf, as: coach, in: club, type: MediaType.pdf, purpose: .post)
            #expect(refused.status == .badRequest && refused.fieldErrors["mimeType"] != nil)
            let receipt = try await harness.upload(pdf, as: coach, in: club, type: MediaType.pdf, purpose: .receipt)
            #expect(receipt.status == .ready)
            let served = try await harness.follow(
                try await harness.call(.get, "/api/v1/media/\(receipt.id)?variant=original", as: coach))
            #expect(served.body == pdf)
            #expect(served.headers[.contentType] == MediaType.pdf)
        }
    }

    @Test func anUploadURLIsBoundToItsBytesAndUsedOnce() async throws {
        try await MediaHarness.run { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try Self.fixture("photo.png")
            let asked = try await harness.ask(photo, as: coach, in: club, type: MediaType.png)
            #expect(asked.status == .created)
            let upload = try asked.data(MediaUpload.self)
            #expect(upload.media.status == .pending)
            #expect(asked.headers[.cacheControl] == "no-store")

            // Other bytes of the same length: the checksum does not match.
            var other = photo
            other[other.count - 1] ^= 0xFF
            let mismatch = try await harness.send(upload.upload, other)
            #expect(mismatch.status == .badRequest && mismatch.errorCode == "UPLOAD_MISMATCH")
            // Another declared type, length or checksum than was signed: the signature fails.
            for change in [
                ["Content-Type": "image/jpeg"],
                [LocalObjectStore.checksumHeader: Data(SHA256.hash(data: other)).base64EncodedString()],
            ] {
                let reply = try await harness.send(upload.upload, photo, headers: change)
                #expect(reply.status == .forbidden && reply.errorCode == "UPLOAD_URL_INVALID", "\(change)")
            }
            // A URL whose expiry was moved on is not the one signed.
            var moved = upload.upload
            moved.url = moved.url.replacingOccurrences(of: "expires=", with: "expires=1")
            let tampered = try await harness.send(moved, photo)
            #expect(tampered.status == .forbidden && tampered.errorCode == "UPLOAD_URL_INVALID")
            // Before the upload, completing says it has not arrived.
            let early = try await harness.call(.post, upload.completeUrl, as: coach)
            #expect(early.status == .conflict && early.errorCode == "UPLOAD_INCOMPLETE")

            #expect(try await harness.send(upload.upload, photo).status == .created)
            let reused = try await harness.send(upload.upload, photo)
            #expect(reused.status == .conflict && reused.errorCode == "UPLOAD_ALREADY_USED")
            // Completing again is harmless: it answers the row.
            #expect(try await harness.call(.post, upload.completeUrl, as: coach).status == .accepted)
            #expect(try await harness.processed(upload.media.id, as: coach).status == .ready)
        }
    }

    /// An upload URL outlives its uploader's membership by up to its 15 minutes: bytes sent to
    /// it after the uploader left (or was removed) are not taken, and nothing of them reaches
    /// the community. A hostile probe's: the file was processed and shown to the community, in
    /// its sync, as the former member's.
    @Test func anUploadBySomeoneWhoHasLeftIsNotTaken() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let photo = try Self.fixture("photo.png")
            let upload = try await harness.ask(photo, as: ada, in: club, type: MediaType.png).data(MediaUpload.self)
            let removed = try await api.call(.delete, "/api/v1/communities/\(club.id)/members/\(ada.id)", as: coach)
            #expect(removed.status == .noContent)
            let sent = try await harness.send(upload.upload, photo)
            #expect(sent.status == .notFound && sent.errorCode == "COMMUNITY_NOT_FOUND", "\(sent.status)")
            // It was not marked uploaded (which queues its processing), and its bytes are to be
            // swept.
            let (status, discarded) = try await withTestDatabase { database in
                (
                    try await database.systemQuery("SELECT status::text FROM media WHERE id = \(upload.media.id)")
                        .first?.decode(String.self),
                    try await database.systemQuery(
                        "SELECT 1 FROM media_garbage WHERE storage_key = \(MediaKeys.upload(upload.media.id))"
                    ).count
                )
            }
            #expect(status == "pending" && discarded == 1)
            // Asking for an upload to it now is the gate's 404; one whose account was deleted
            // since is refused as such.
            let again = try await harness.ask(photo, as: ada, in: club, type: MediaType.png)
            #expect(again.status == .notFound && again.errorCode == "COMMUNITY_NOT_FOUND")
            let ben = try await api.signIn("Ben")
            try await api.join(ben, club, invitedBy: coach)
            let bens = try await harness.ask(photo, as: ben, in: club, type: MediaType.png).data(MediaUpload.self)
            try await withTestDatabase { database in
                _ = try await database.systemQuery("UPDATE users SET deleted_at = now() WHERE id = \(ben.id)")
            }
            let deleted = try await harness.send(bens.upload, photo)
            #expect(deleted.status == .unauthorized && deleted.errorCode == "ACCOUNT_DELETED")
            // Removed after the gate let the request in (here, while it holds the member's
            // standing in its cache): the wall refuses the row, and that is the gate's 404 (a
            // review's: 500).
            let cleo = try await api.signIn("Cleo")
            try await api.join(cleo, club, invitedBy: coach)
            #expect(try await harness.ask(photo, as: cleo, in: club, type: MediaType.png).status == .created)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
                _ = try await owner.systemQuery(
                    "UPDATE members SET left_at = now() WHERE community_id = \(club.id) AND user_id = \(cleo.id)")
            }
            let behind = try await harness.ask(photo, as: cleo, in: club, type: MediaType.png)
            #expect(behind.status == .notFound && behind.errorCode == "COMMUNITY_NOT_FOUND", "\(behind.status)")
        }
    }

    @Test func badRequestsAreRefusedWithTheirField() async throws {
        try await MediaHarness.run { harness in
            let (coach, stranger) = (try await harness.api.signIn("Coach"), try await harness.api.signIn("Eve"))
            let club = try await harness.api.community(by: coach)
            let photo = try Self.fixture("photo.png")
            let sha = SHA256.hash(data: photo).lowerHex
            func ask(_ json: String) async throws -> CoreHarness.Reply {
                try await harness.call(.post, "/api/v1/media/upload", as: coach, json: json)
            }
            let base =
                #""purpose":"post","communityId":"\#(club.id)","mimeType":"image/png","sizeBytes":\#(photo.count),"sha256":"\#(sha)""#
            for (json, field) in [
                (#"{\#(base),"filename":"../etc/passwd"}"#, "filename"),
                (#"{\#(base),"filename":"a\\b.png"}"#, "filename"),
                (#"{\#(base),"filename":"a\u0000b.png"}"#, "filename"),
                (#"{\#(base),"filename":"photo.png\n"}"#, "filename"),
                // A right-to-left override shows "\u{202E}gnp.exe" as "exe.png"; other format
                // characters and separators hide what a name is too.
                (#"{\#(base),"filename":"\u202egnp.exe"}"#, "filename"),
                (#"{\#(base),"filename":"\ufeffa.png"}"#, "filename"),
                (#"{\#(base),"filename":"a\u2029b.png"}"#, "filename"),
                (
                    #"{"purpose":"post","communityId":"\#(club.id)","filename":"a.png","mimeType":"image/png","sizeBytes":0,"sha256":"\#(sha)"}"#,
                    "sizeBytes"
                ),
                (
                    #"{"purpose":"post","communityId":"\#(club.id)","filename":"a.png","mimeType":"image/png","sizeBytes":30000000,"sha256":"\#(sha)"}"#,
                    "sizeBytes"
                ),
                (
                    #"{"purpose":"avatar","filename":"a.png","mimeType":"image/png","sizeBytes":20000000,"sha256":"\#(sha)"}"#,
                    "sizeBytes"
                ),
                (
                    #"{"purpose":"post","communityId":"\#(club.id)","filename":"a.png","mimeType":"image/tiff","sizeBytes":10,"sha256":"\#(sha)"}"#,
                    "mimeType"
                ),
                (
                    #"{"purpose":"post","communityId":"\#(club.id)","filename":"a.png","mimeType":" image/png","sizeBytes":10,"sha256":"\#(sha)"}"#,
                    "mimeType"
                ),
                (
                    #"{"purpose":"post","communityId":"\#(club.id)","filename":"a.png","mimeType":"image/png","sizeBytes":10,"sha256":"xyz"}"#,
                    "sha256"
                ),
                (
                    #"{"purpose":"post","filename":"a.png","mimeType":"image/png","sizeBytes":10,"sha256":"\#(sha)"}"#,
                    "communityId"
                ),
                (
                    #"{"purpose":"avatar","communityId":"\#(club.id)","filename":"a.png","mimeType":"image/png","sizeBytes":10,"sha256":"\#(sha)"}"#,
                    "communityId"
                ),
                (
                    #"{"purpose":"video","filename":"a.png","mimeType":"image/png","sizeBytes":10,"sha256":"\#(sha)"}"#,
                    "purpose"
                ),
            ] {
                let reply = try await ask(json)
                #expect(reply.status == .badRequest && reply.fieldErrors[field] != nil, "\(json): \(reply.fieldErrors)")
            }
            // Someone else's community: as if it did not exist.
            let outsider = try await harness.ask(photo, as: stranger, in: club, type: MediaType.png)
            #expect(outsider.status == .notFound && outsider.errorCode == "COMMUNITY_NOT_FOUND")
            // Unsigned, expired or forged file URLs.
            let id = UUID()
            for path in [
                "/api/v1/media/files/uploads/\(id)", "/api/v1/media/files/uploads/\(id)?expires=1&signature=00",
                "/api/v1/media/files/variants/\(id)/thumb.jpg?expires=99999999999&type=image/jpeg&signature=ab",
                "/api/v1/media/files/variants/\(id)/..%2F..%2Fetc?expires=99999999999&type=x&signature=ab",
            ] {
                let method: HTTPRequest.Method = path.contains("uploads") ? .put : .get
                let reply = try await harness.call(method, path, as: nil, body: photo)
                #expect(reply.status == .forbidden, "\(path)")
            }
            // A bad variant is a validation error; an unknown id is not found.
            let unknown = try await harness.call(.get, "/api/v1/media/\(UUID())?variant=huge", as: coach)
            #expect(unknown.status == .notFound)
        }
    }

    @Test func anAvatarBelongsToItsUserAndIsSeenByThoseWhoShareACommunity() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (ada, bo, eve) = (try await api.signIn("Ada"), try await api.signIn("Bo"), try await api.signIn("Eve"))
            _ = try await api.club(of: ada, with: [bo])
            let avatar = try await harness.upload(
                try Self.fixture("photo.webp"), as: ada, in: nil, type: MediaType.webp, purpose: .avatar)
            #expect(avatar.status == .ready && avatar.communityId == nil)
            #expect(try await harness.call(.get, "/api/v1/media/\(avatar.id)/details", as: bo).status == .ok)
            #expect(try await harness.call(.get, "/api/v1/media/\(avatar.id)/details", as: eve).status == .notFound)
            #expect(try await harness.call(.delete, "/api/v1/media/\(avatar.id)", as: bo).status == .forbidden)
            #expect(try await harness.call(.delete, "/api/v1/media/\(avatar.id)", as: ada).status == .noContent)
        }
    }

    @Test func postsAndReceiptsNameOnlyTheirCommunitysMedia() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let other = try await api.community(by: ada)
            let photo = try Self.fixture("photo.png")
            let ours = try await harness.upload(photo, as: ada, in: club, type: MediaType.png)
            let theirs = try await harness.upload(photo, as: ada, in: other, type: MediaType.png)
            // Receipts are uploaded as receipts (a post's photo is not one: MediaLifeTests).
            let ourReceipt = try await harness.upload(photo, as: ada, in: club, type: MediaType.png, purpose: .receipt)
            let theirReceipt = try await harness.upload(
                photo, as: ada, in: other, type: MediaType.png, purpose: .receipt)

            let post = try await api.call(
                .post, "/api/v1/communities/\(club.id)/posts", as: ada,
                json: #"{"type":"photo","mediaIds":["\#(ours.id)","\#(ours.id)"]}"#)
            #expect(post.status == .created)
            #expect(try post.data(Post.self).mediaIds == [ours.id])
            let foreign = try await api.call(
                .post, "/api/v1/communities/\(club.id)/posts", as: ada,
                json: #"{"type":"photo","mediaIds":["\#(theirs.id)"]}"#)
            #expect(foreign.status == .badRequest && foreign.fieldErrors["mediaIds"] != nil)
            let empty = try await api.call(
                .post, "/api/v1/communities/\(club.id)/posts", as: ada, json: #"{"type":"photo"}"#)
            #expect(empty.status == .badRequest && empty.fieldErrors["mediaUrls"] != nil)

            let expense =
                #"{"description":"Balls","totalAmount":3000,"currency":"EUR","split":{"method":"equal","members":[{"userId":"\#(ada.id)"}]},"receiptMediaId":"RECEIPT"}"#
            let paid = try await api.call(
                .post, "/api/v1/communities/\(club.id)/transactions", as: ada,
                json: expense.replacingOccurrences(of: "RECEIPT", with: ourReceipt.id.lowercasedString))
            #expect(paid.status == .created)
            #expect(try paid.data(LedgerTransaction.self).receiptMediaId == ourReceipt.id)
            let misfiled = try await api.call(
                .post, "/api/v1/communities/\(club.id)/transactions", as: ada,
                json: expense.replacingOccurrences(of: "RECEIPT", with: theirReceipt.id.lowercasedString))
            #expect(misfiled.status == .badRequest && misfiled.fieldErrors["receiptMediaId"] != nil)

            // The second wall: written past the routes, another community's media is refused too.
            try await withTestDatabase { db in
                await #expect(throws: (any Error).self) {
                    try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            """
                            INSERT INTO posts (community_id, author_id, type, media_ids)
                            VALUES (\(club.id), \(ada.id), 'photo', ARRAY[\(theirs.id)]::uuid[])
                            """, logger: TestEnvironment.logger)
                    }
                }
                await #expect(throws: (any Error).self) {
                    try await db.transaction(userId: ada.id) { connection in
                        try await connection.query(
                            "UPDATE transactions SET receipt_media_id = \(theirReceipt.id) WHERE community_id = \(club.id)",
                            logger: TestEnvironment.logger)
                    }
                }
            }
        }
    }

    @Test func syncCarriesACommunitysMediaAsItIsProcessedAndDeleted() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let first = try await api.call(.get, "/api/v1/communities/\(club.id)/sync", as: coach)
                .data(CommunitySync.self)
            #expect(first.media.created.isEmpty)
            let media = try await harness.upload(
                try Self.fixture("photo.png"), as: coach, in: club, type: MediaType.png)
            let later = try await api.call(
                .get, "/api/v1/communities/\(club.id)/sync?since=\(first.syncToken)", as: coach
            ).data(CommunitySync.self)
            let synced = later.media.created + later.media.updated
            #expect(synced.map(\.id) == [media.id])
            #expect(synced.first?.status == .ready && synced.first?.variants == [.thumb, .large, .original])
            #expect(try await harness.call(.delete, "/api/v1/media/\(media.id)", as: coach).status == .noContent)
            let last = try await api.call(
                .get, "/api/v1/communities/\(club.id)/sync?since=\(later.syncToken)", as: coach
            ).data(CommunitySync.self)
            #expect(last.media.deleted == [media.id])
        }
    }

    /// Deleted media and a deleted community's media leave no files behind after a sweep.
    @Test func theSweepRemovesTheFilesOfDeletedMediaAndOfDeletedCommunities() async throws {
        try await MediaHarness.run(media: ["ORBITCOVE_MEDIA_SWEEP_SECONDS": "1"]) { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try Self.fixture("photo.png")
            let deleted = try await harness.upload(photo, as: coach, in: club, type: MediaType.png)
            let cascaded = try await harness.upload(photo, as: coach, in: club, type: MediaType.png)
            @Sendable func files(_ id: UUID) -> [String] {
                let folder = URL(fileURLWithPath: MediaHarness.directory).appendingPathComponent(
                    "variants/\(id.lowercasedString)")
                return (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            }
            #expect(files(deleted.id).count == 5)
            // The upload itself is gone once processed (queued as garbage, swept below).
            #expect(try await harness.call(.delete, "/api/v1/media/\(deleted.id)", as: coach).status == .noContent)
            try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { db in
                try await db.transaction(scope: nil) { connection in
                    try await connection.query(
                        "DELETE FROM communities WHERE id = \(club.id)", logger: TestEnvironment.logger)
                }
            }
            let swept = try await eventually(timeout: .seconds(20)) {
                files(deleted.id).isEmpty && files(cascaded.id).isEmpty
                    && !FileManager.default.fileExists(
                        atPath: MediaHarness.directory + "/uploads/\(cascaded.id.lowercasedString)")
            }
            #expect(swept)
        }
    }
}

/// The size of an image from its header (libvips reads it without decoding).
enum VipsProbe {
    static func size(of bytes: Data) throws -> (width: Int, height: Int) {
        let header = try Vips.header(bytes)
        return (header.width, header.height)
    }
}
