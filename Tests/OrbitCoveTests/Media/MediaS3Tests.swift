import AsyncHTTPClient
import Crypto
import Foundation
import MediaService
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The S3 store, production code, against a real S3-protocol server (moto in server mode,
/// which `make test` starts): its own calls signed with our SigV4, and the whole media flow
/// with clients uploading to and reading from presigned URLs.
@Suite struct MediaS3Tests {
    static func store(_ client: HTTPClient) throws -> S3ObjectStore {
        let settings = try MediaSettings(environment: Environment(MediaHarness.s3Settings))
        return S3ObjectStore(configuration: try #require(settings.s3), client: client)
    }

    @Test func objectsArePutReadCheckedAndDeleted() async throws {
        let store = try Self.store(HTTPClient.shared)
        try await store.createBucketIfMissing()
        let key = MediaKeys.variant(UUID(), "thumb.jpg")
        let body = Data((0..<5000).map { UInt8($0 % 251) })
        try await store.put(key: key, body: body, contentType: "image/jpeg")
        #expect(try await store.get(key: key, maxBytes: body.count) == body)
        await #expect(throws: ObjectStoreError.tooLarge) { try await store.get(key: key, maxBytes: 100) }
        let head = try #require(try await store.head(key: key))
        #expect(head.size == body.count)
        #expect(head.sha256 == Data(SHA256.hash(data: body)))
        try await store.delete(key: key)
        #expect(try await store.get(key: key, maxBytes: body.count) == nil)
        #expect(try await store.head(key: key) == nil)
        // Deleting what is not there succeeds.
        try await store.delete(key: key)
    }

    @Test func aPhotoGoesThroughS3FromUploadToRedirect() async throws {
        try await Self.store(HTTPClient.shared).createBucketIfMissing()
        try await MediaHarness.run(media: MediaHarness.s3Settings) { harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try MediaTests.fixture("portrait-exif6.jpg")
            let upload = try await harness.ask(photo, as: coach, in: club, type: MediaType.jpeg).data(MediaUpload.self)
            #expect(upload.upload.url.hasPrefix(MediaHarness.s3Settings["ORBITCOVE_S3_ENDPOINT"] ?? "-"))
            #expect(upload.upload.url.contains("X-Amz-Signature="))
            // Not there yet: completing is refused.
            #expect(try await harness.call(.post, upload.completeUrl, as: coach).status == .conflict)

            var put = HTTPClientRequest(url: upload.upload.url)
            put.method = .PUT
            for (name, value) in upload.upload.headers { put.headers.add(name: name, value: value) }
            put.body = .bytes(ByteBuffer(data: photo))
            let stored = try await HTTPClient.shared.execute(put, timeout: .seconds(10))
            #expect(stored.status == .ok)

            #expect(try await harness.call(.post, upload.completeUrl, as: coach).status == .accepted)
            let media = try await harness.processed(upload.media.id, as: coach)
            #expect(media.status == .ready && media.width == 480 && media.height == 640)

            let redirect = try await harness.call(
                .get, "/api/v1/media/\(media.id)?variant=thumb&format=webp", as: coach)
            #expect(redirect.status == .found)
            let location = try #require(redirect.headers[.location])
            let fetched = try await HTTPClient.shared.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
            #expect(fetched.status == .ok)
            #expect(fetched.headers.first(name: "content-type") == "image/webp")
            let bytes = Data(buffer: try await fetched.body.collect(upTo: 1 << 20))
            #expect(try Vips.header(bytes).width == 200)
            #expect(MediaTests.metadataMarkers(in: bytes) == [])
        }
    }

    /// An upload URL may be used again after its upload was processed (S3 takes any PUT it
    /// signed until it expires): the file it writes is removed by a later sweep, not kept.
    @Test func aPutAfterProcessingLeavesNoFileBehind() async throws {
        let store = try Self.store(HTTPClient.shared)
        try await store.createBucketIfMissing()
        try await MediaHarness.run(
            media: MediaHarness.s3Settings.merging(["ORBITCOVE_MEDIA_SWEEP_SECONDS": "1"]) { _, new in new }
        ) {
            harness in
            let coach = try await harness.api.signIn("Coach")
            let club = try await harness.api.community(by: coach)
            let photo = try MediaTests.fixture("photo.png")
            let upload = try await harness.ask(photo, as: coach, in: club, type: MediaType.png).data(MediaUpload.self)
            func put() async throws -> Int {
                var request = HTTPClientRequest(url: upload.upload.url)
                request.method = .PUT
                for (name, value) in upload.upload.headers { request.headers.add(name: name, value: value) }
                request.body = .bytes(ByteBuffer(data: photo))
                return Int(try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status.code)
            }
            #expect(try await put() == 200)
            #expect(try await harness.call(.post, upload.completeUrl, as: coach).status == .accepted)
            #expect(try await harness.processed(upload.media.id, as: coach).status == .ready)
            let key = MediaKeys.upload(upload.media.id)
            // Processed: its upload is swept.
            #expect(try await eventually(timeout: .seconds(15)) { try await store.head(key: key) == nil })
            // The URL used again: the file comes back, and goes with a later sweep.
            #expect(try await put() == 200)
            #expect(try await store.head(key: key) != nil)
            let recheck = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { db in
                try await db.transaction(scope: nil) { connection in
                    // The key is looked at again while its URL lives; move that look to now.
                    try await connection.query(
                        "UPDATE media_garbage SET queued_at = now() WHERE storage_key = \(key) RETURNING 1",
                        logger: TestEnvironment.logger
                    ).collect().count
                }
            }
            #expect(recheck == 1)
            #expect(try await eventually(timeout: .seconds(15)) { try await store.head(key: key) == nil })
        }
    }
}
