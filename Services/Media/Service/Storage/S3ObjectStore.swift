import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import OrbitCoveInfra

/// A bucket of S3 or an S3-compatible server (MinIO, Ceph, R2; moto in tests), spoken to over
/// AsyncHTTPClient with our own ``SigV4Signer``. The HTTP client is the caller's: the store
/// neither starts nor shuts it down, and may be made before it runs (`client` is asked for it
/// on each call, as `HTTPClientService.running` gives it once the service group has started).
///
/// Writes carry `x-amz-checksum-sha256` and a signed payload hash, so S3 refuses a body that
/// changed on the way, and answers `head` with the SHA-256 it checked. Upload URLs sign the
/// length, type and checksum as headers, so S3 refuses any other (a signature mismatch for the
/// first two, `BadDigest` for the last). Every call has ``Configuration/timeout``, body included.
///
/// S3 answers 403, not 404, for a missing key when the credentials may not list the bucket:
/// grant `s3:ListBucket` as well as the object actions, or `get` and `head` of a missing key fail.
package struct S3ObjectStore: ObjectStore {
    package struct Configuration: Sendable {
        /// Where the S3 API answers: `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:55900`.
        package var endpoint: URL
        package var bucket: String
        package var region: String
        package var accessKeyId: String
        package var secretAccessKey: String
        package var sessionToken: String?
        /// `endpoint/bucket/key`, which MinIO, moto and bucket names with dots need, rather than
        /// `bucket.endpoint/key` (virtual-hosted, for DNS-compatible names only).
        package var pathStyle: Bool
        /// How long one call may take, from connecting to the last byte of the answer.
        package var timeout: Duration

        package init(
            endpoint: URL, bucket: String, region: String, accessKeyId: String, secretAccessKey: String,
            sessionToken: String? = nil, pathStyle: Bool = true, timeout: Duration = .seconds(30)
        ) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.region = region
            self.accessKeyId = accessKeyId
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
            self.pathStyle = pathStyle
            self.timeout = timeout
        }
    }

    private let configuration: Configuration
    private let client: @Sendable () async throws -> HTTPClient
    private let signer: SigV4Signer
    private let now: @Sendable () -> Date

    package init(
        configuration: Configuration, client: @escaping @Sendable () async throws -> HTTPClient,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.client = client
        self.now = now
        signer = SigV4Signer(
            accessKeyId: configuration.accessKeyId, secretAccessKey: configuration.secretAccessKey,
            sessionToken: configuration.sessionToken, region: configuration.region)
    }

    package init(configuration: Configuration, client: HTTPClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(configuration: configuration, client: { client }, now: now)
    }

    package func put(key: String, body: Data, contentType: String) async throws {
        let digest = SHA256.hash(data: body)
        // `x-amz-sdk-checksum-algorithm` is what the SDKs send beside the checksum; S3 needs only
        // the checksum, but moto records it only when both are there.
        let headers = [
            ("content-type", contentType), ("content-length", String(body.count)),
            ("x-amz-checksum-sha256", Data(digest).base64EncodedString()), ("x-amz-sdk-checksum-algorithm", "SHA256"),
        ]
        let request = try signedRequest(
            "PUT", url(key: key), headers: headers, body: body, payloadHash: digest.lowerHex)
        try await perform("put", request) { response in
            guard response.status == .ok else { throw await Self.failure("put", response) }
            _ = try await Self.body(of: response, upTo: 64 * 1024)
        }
    }

    package func get(key: String, maxBytes: Int) async throws -> Data? {
        let request = try signedRequest("GET", url(key: key))
        return try await perform("get", request) { response in
            if response.status == .notFound { return nil }
            guard response.status == .ok else { throw await Self.failure("get", response) }
            if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > maxBytes {
                throw ObjectStoreError.tooLarge
            }
            guard let body = try await Self.body(of: response, upTo: maxBytes) else { throw ObjectStoreError.tooLarge }
            return body
        }
    }

    package func head(key: String) async throws -> StoredObject? {
        let request = try signedRequest("HEAD", url(key: key), headers: [("x-amz-checksum-mode", "ENABLED")])
        return try await perform("head", request) { response in
            if response.status == .notFound { return nil }
            guard response.status == .ok else { throw await Self.failure("head", response) }
            guard let size = response.headers.first(name: "content-length").flatMap(Int.init) else {
                throw ObjectStoreError.failed(operation: "head", status: 200, message: "no Content-Length")
            }
            // A multipart object's checksum is of its parts' checksums (type COMPOSITE, value
            // `…-N`): not the SHA-256 of its bytes, so it is not reported as one.
            let composite = response.headers.first(name: "x-amz-checksum-type") == "COMPOSITE"
            let sha256 = response.headers.first(name: "x-amz-checksum-sha256")
                .flatMap { Data(base64Encoded: $0) }
                .flatMap { $0.count == SHA256.byteCount && !composite ? $0 : nil }
            return StoredObject(size: size, sha256: sha256)
        }
    }

    package func delete(key: String) async throws {
        let request = try signedRequest("DELETE", url(key: key))
        try await perform("delete", request) { response in
            switch response.status {
            case .noContent, .ok, .notFound: break
            default: throw await Self.failure("delete", response)
            }
            _ = try await Self.body(of: response, upTo: 64 * 1024)
        }
    }

    package func uploadRequest(
        key: String, contentType: String, size: Int, sha256: Data, expires: Date
    ) throws
        -> SignedRequest
    {
        let headers = [
            "Content-Type": contentType, "Content-Length": String(size),
            "x-amz-checksum-sha256": sha256.base64EncodedString(),
        ]
        let signed = try signer.presign(
            method: "PUT", url: url(key: key), headers: headers.map { ($0.key, $0.value) },
            expires: try seconds(until: expires), date: now())
        return SignedRequest(method: "PUT", url: signed.url, headers: headers)
    }

    package func downloadURL(key: String, contentType: String, expires: Date) throws -> String {
        let signed = try signer.presign(
            method: "GET", url: url(key: key, query: [("response-content-type", contentType)]), headers: [],
            expires: try seconds(until: expires), date: now())
        return signed.url
    }

    /// Makes the bucket unless it is there: for local servers and tests, where nothing else
    /// creates it. Production buckets are made, with their policies, outside the application.
    package func createBucketIfMissing() async throws {
        let exists = try await perform("head bucket", try signedRequest("HEAD", url(key: nil))) { response in
            if response.status == .notFound { return false }
            guard response.status == .ok else { throw await Self.failure("head bucket", response) }
            return true
        }
        guard !exists else { return }
        // us-east-1 is the one region that takes no location (and refuses its own name as one).
        let body =
            configuration.region == "us-east-1"
            ? Data()
            : Data(
                ("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                    + "<LocationConstraint>\(configuration.region)</LocationConstraint></CreateBucketConfiguration>")
                    .utf8)
        let request = try signedRequest("PUT", url(key: nil), body: body)
        try await perform("create bucket", request) { response in
            if response.status == .ok { return }
            let failure = await Self.failure("create bucket", response)
            // Another process made it between the two requests.
            if case .failed(_, 409, let message) = failure, message.hasPrefix("BucketAlreadyOwnedByYou") { return }
            throw failure
        }
    }
}

extension S3ObjectStore.Configuration: CustomStringConvertible {
    /// Without the secret or the token, so the settings can be logged.
    package var description: String {
        "S3(\(endpoint.absoluteString), bucket \(bucket), \(region), key \(accessKeyId), secret redacted)"
    }
}

extension S3ObjectStore {
    /// The URL of `key` (of the bucket when `key` is nil); the key is encoded as SigV4 encodes,
    /// so the path sent is the path signed.
    func url(key: String?, query: [(name: String, value: String)] = []) throws -> URL {
        let endpoint = configuration.endpoint
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false), let host = components.host
        else { throw SigV4Error.invalidURL(endpoint.absoluteString) }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        if configuration.pathStyle {
            path += "/" + SigV4Signer.uriEncode(configuration.bucket.utf8)
            if let key { path += "/" + SigV4Signer.uriEncode(key.utf8, keepingSlashes: true) }
        } else {
            components.host = "\(configuration.bucket).\(host)"
            path += "/" + (key.map { SigV4Signer.uriEncode($0.utf8, keepingSlashes: true) } ?? "")
        }
        components.percentEncodedPath = path
        components.percentEncodedQuery =
            query.isEmpty
            ? nil
            : query.map { SigV4Signer.uriEncode($0.name.utf8) + "=" + SigV4Signer.uriEncode($0.value.utf8) }
                .joined(separator: "&")
        guard let url = components.url else { throw SigV4Error.invalidURL(endpoint.absoluteString) }
        return url
    }

    /// A request signed in its headers, with exactly the headers it was signed with (AsyncHTTPClient
    /// sets `Content-Length` itself, to the same value).
    private func signedRequest(
        _ method: String, _ url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil,
        payloadHash: String? = nil
    ) throws -> HTTPClientRequest {
        let host = try SigV4Signer.host(of: url)
        let signature = try signer.signHeaders(
            method: method, url: url, headers: headers + [("host", host)],
            payloadHash: payloadHash ?? SigV4Signer.payloadHash(of: body ?? Data()), date: now())
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method)
        request.headers.add(name: "host", value: host)
        for header in headers + signature.headers { request.headers.add(name: header.name, value: header.value) }
        if let body { request.body = .bytes(body) }
        return request
    }

    private func seconds(until expires: Date) throws -> Int {
        let seconds = expires.timeIntervalSince(now()).rounded(.up)
        guard seconds >= 1, seconds <= 604_800 else { throw SigV4Error.expiryOutOfRange(Int(seconds)) }
        return Int(seconds)
    }

    /// Sends `request` and reads its answer with `interpret`, all within the timeout: the
    /// client's own deadline ends at the answer's head, so reading the body races a timer too.
    private func perform<Result: Sendable>(
        _ operation: String, _ request: HTTPClientRequest,
        _ interpret: @escaping @Sendable (HTTPClientResponse) async throws -> Result
    ) async throws -> Result {
        let client = client
        let timeout = configuration.timeout
        return try await withThrowingTaskGroup(of: Result.self) { group in
            group.addTask {
                try await interpret(try await client().execute(request, timeout: TimeAmount(timeout)))
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw HTTPClientError.deadlineExceeded
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() else { throw CancellationError() }
            return result
        }
    }

    /// The body, or `nil` as soon as it is longer than `limit` (the rest is never read).
    private static func body(of response: HTTPClientResponse, upTo limit: Int) async throws -> Data? {
        var body = Data()
        for try await chunk in response.body {
            guard body.count + chunk.readableBytes <= limit else { return nil }
            body.append(contentsOf: chunk.readableBytesView)
        }
        return body
    }

    /// S3's error as `Code: Message` from its XML body, or the start of whatever else it sent.
    private static func failure(_ operation: String, _ response: HTTPClientResponse) async -> ObjectStoreError {
        let body = ((try? await body(of: response, upTo: 64 * 1024)) ?? nil).map { String(decoding: $0, as: UTF8.self) }
        let text = body ?? ""
        let message: String =
            switch (element("Code", in: text), element("Message", in: text)) {
            case (let code?, let detail?): "\(code): \(detail)"
            case (let code?, nil): code
            default: text.isEmpty ? response.status.reasonPhrase : String(text.prefix(200))
            }
        return .failed(operation: operation, status: Int(response.status.code), message: message)
    }

    /// The text of the first `<name>` element, entities decoded; S3's error bodies are flat enough for this.
    private static func element(_ name: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(name)>"),
            let end = xml.range(of: "</\(name)>", range: start.upperBound..<xml.endIndex)
        else { return nil }
        return String(xml[start.upperBound..<end.lowerBound])
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
