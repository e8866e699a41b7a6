import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MediaService
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The media service as clients use it, beside core (for communities and members) and auth:
/// uploads go through the local store's signed URLs to the service's own routes, and its
/// worker consumes the test vhost's `media-processing` queue.
struct MediaHarness: Sendable {
    let api: CoreHarness
    let media: any TestClientProtocol

    /// Every media instance of the suite shares one directory and one key: a message queued by
    /// one test may be processed by another test's worker.
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orbitcove-test-media").path
    static let signingKey = String(repeating: "test-media-url-key-", count: 3)

    /// The test S3 server (moto, started by `make test`) and the bucket the S3 tests use.
    static let s3Settings = [
        "ORBITCOVE_MEDIA_STORAGE": "s3",
        "ORBITCOVE_S3_ENDPOINT": ProcessInfo.processInfo.environment["ORBITCOVE_TEST_S3_URL"]
            ?? "http://127.0.0.1:55900",
        "ORBITCOVE_S3_BUCKET": "orbitcove-test-media", "ORBITCOVE_S3_REGION": "us-east-1",
        "ORBITCOVE_S3_ACCESS_KEY_ID": "testing", "ORBITCOVE_S3_SECRET_ACCESS_KEY": "testing",
    ]

    static func run(
        media extra: [String: String] = [:], core: [String: String] = [:],
        _ body: @Sendable (MediaHarness) async throws -> Void
    ) async throws {
        // Every instance's worker takes any test's messages, so instances on different stores
        // never run at once (one with the other's upload would fail it as missing).
        let backend = extra["ORBITCOVE_MEDIA_STORAGE"] ?? "local"
        await StoreExclusion.shared.enter(backend)
        do {
            try await runAlone(media: extra, core: core, body)
        } catch {
            await StoreExclusion.shared.leave()
            throw error
        }
        await StoreExclusion.shared.leave()
    }

    private static func runAlone(
        media extra: [String: String], core: [String: String], _ body: @Sendable (MediaHarness) async throws -> Void
    ) async throws {
        try await CoreHarness.run(core: core) { api in
            let runtime = try TestEnvironment.runtime(
                name: "orbitcove-media", extra: ["ORBITCOVE_JWKS_URL": api.jwksURL])
            let environment = Environment(
                [
                    "ORBITCOVE_MEDIA_DIRECTORY": directory, "ORBITCOVE_MEDIA_SIGNING_KEY": signingKey,
                    "ORBITCOVE_PUBLIC_URL": "http://gateway.test",
                ].merging(extra) { _, new in new })
            let app = runtime.makeApplication(try MediaApplication.parts(runtime: runtime, environment: environment))
            try await app.test(.router) { client in
                try await body(MediaHarness(api: api, media: client))
            }
        }
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, as person: CoreHarness.Person?, json: String? = nil,
        body: Data? = nil, headers: HTTPFields = [:]
    ) async throws -> CoreHarness.Reply {
        var fields = headers
        if let person { fields[.authorization] = "Bearer \(person.token)" }
        if json != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        if fields[.realIP] == nil { fields[.realIP] = TestEnvironment.uniqueClientAddress() }
        let payload = json.map { ByteBuffer(string: $0) } ?? body.map { ByteBuffer(data: $0) }
        let response = try await media.executeRequest(uri: path, method: method, headers: fields, body: payload)
        return CoreHarness.Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
    }

    /// Asks for an upload URL for `bytes`.
    func ask(
        _ bytes: Data, as person: CoreHarness.Person, in community: Community?, type: String,
        purpose: MediaPurpose = .post, filename: String = "photo.jpg", size: Int? = nil
    ) async throws -> CoreHarness.Reply {
        let community = community.map { #","communityId":"\#($0.id)""# } ?? ""
        return try await call(
            .post, "/api/v1/media/upload", as: person,
            json: """
                {"purpose":"\(purpose.rawValue)","filename":"\(filename)","mimeType":"\(type)",\
                "sizeBytes":\(size ?? bytes.count),"sha256":"\(SHA256.hash(data: bytes).lowerHex)"\(community)}
                """)
    }

    /// Sends `bytes` to a signed upload request as a client would (the gateway's host removed).
    func send(
        _ upload: MediaUpload.Request, _ bytes: Data, headers change: [String: String] = [:]
    )
        async throws -> CoreHarness.Reply
    {
        var fields = HTTPFields()
        for (name, value) in upload.headers.merging(change, uniquingKeysWith: { _, new in new }) {
            fields[try #require(HTTPField.Name(name))] = value
        }
        return try await call(.put, Self.path(of: upload.url), as: nil, body: bytes, headers: fields)
    }

    /// Uploads `bytes` and waits until processing has finished; the row as it ended.
    func upload(
        _ bytes: Data, as person: CoreHarness.Person, in community: Community?, type: String,
        purpose: MediaPurpose = .post
    ) async throws -> Media {
        let asked = try await ask(bytes, as: person, in: community, type: type, purpose: purpose)
        guard asked.status == .created else {
            throw TestFailure("upload refused: \(asked.status) \(asked.errorCode ?? "")")
        }
        let upload = try asked.data(MediaUpload.self)
        let sent = try await send(upload.upload, bytes)
        guard sent.status == .created else { throw TestFailure("PUT refused: \(sent.status) \(sent.errorCode ?? "")") }
        return try await processed(upload.media.id, as: person)
    }

    /// The row once it is `ready` or `failed` (waits for the worker).
    func processed(_ id: UUID, as person: CoreHarness.Person) async throws -> Media {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let media = try await call(.get, "/api/v1/media/\(id)/details", as: person).data(Media.self)
            if media.status == .ready || media.status == .failed { return media }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("media \(id) was not processed within 30 s")
    }

    /// Follows a redirect to the local store as a client would; the bytes and headers.
    func follow(_ reply: CoreHarness.Reply) async throws -> CoreHarness.Reply {
        let location = try #require(reply.headers[.location])
        return try await call(.get, Self.path(of: location), as: nil)
    }

    static func path(of url: String) -> String {
        guard let parsed = URLComponents(string: url) else { return url }
        return parsed.percentEncodedPath + (parsed.percentEncodedQuery.map { "?\($0)" } ?? "")
    }
}

/// Lets any number of media instances on one store run at once, and none on another store
/// beside them; waiters for another store go first once the running ones are done.
actor StoreExclusion {
    static let shared = StoreExclusion()
    private var store: String?
    private var running = 0
    private var waiting: [(store: String, resume: CheckedContinuation<Void, Never>)] = []

    func enter(_ wanted: String) async {
        if running == 0 || (store == wanted && waiting.isEmpty) {
            store = wanted
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append((wanted, $0)) }
    }

    func leave() {
        running -= 1
        guard running == 0, let next = waiting.first?.store else { return }
        let admitted = waiting.filter { $0.store == next }
        waiting.removeAll { $0.store == next }
        store = next
        running = admitted.count
        for waiter in admitted { waiter.resume.resume() }
    }
}
