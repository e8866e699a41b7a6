import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization

/// The local store's signed URLs, served through the gateway as S3 would serve its presigned
/// ones: `PUT /api/v1/media/files/uploads/{id}` takes an upload once, with exactly the signed
/// length, type and SHA-256, and completes it; `GET /api/v1/media/files/variants/{id}/{name}`
/// serves a rendition until its URL expires. No bearer token: the signature is the credential.
struct LocalFileRoutes {
    let files: LocalObjectStore
    let store: MediaStore
    let media: MediaRoutes
    /// Uploads whose body is being read: one `PUT` of a URL at a time, so a leaked URL cannot
    /// make this process hold many 25 MB bodies at once.
    private let receiving = Receiving()

    init(files: LocalObjectStore, store: MediaStore, media: MediaRoutes) {
        self.files = files
        self.store = store
        self.media = media
    }

    private final class Receiving: Sendable {
        private let ids = Mutex(Set<UUID>())

        func begin(_ id: UUID) -> Bool { ids.withLock { $0.insert(id).inserted } }
        func end(_ id: UUID) { _ = ids.withLock { $0.remove(id) } }
    }

    func register(on router: Router<AppRequestContext>) {
        router.put("/api/v1/media/files/uploads/:mediaId") { request, context in
            try await put(request, context: context)
        }
        router.get("/api/v1/media/files/variants/:mediaId/:name") { request, context in
            try await get(request, context: context)
        }
    }

    private func put(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard let id = context.parameters.get("mediaId", as: UUID.self) else { throw MediaErrors.uploadExpired }
        let key = MediaKeys.upload(id)
        let query = request.uri.queryParameters
        guard let expires = query.get("expires").flatMap({ Int($0) }), let signature = query.get("signature"),
            expires >= Int(Date().timeIntervalSince1970)
        else { throw MediaErrors.uploadExpired }
        let type = request.headers[.contentType] ?? ""
        let checksum = request.headers[.checksumSHA256] ?? ""
        guard let length = request.headers[.contentLength].flatMap({ Int($0) }),
            files.verify(
                LocalObjectStore.uploadFacts(key: key, expires: expires, type: type, size: length, sha256: checksum),
                signature: signature)
        else { throw MediaErrors.uploadExpired }
        guard let row = try await store.find(system: id) else { throw MediaErrors.notFound }
        guard row.media.status == .pending else { throw MediaErrors.uploadUsed }
        guard receiving.begin(id) else { throw MediaErrors.uploadInProgress }
        defer { receiving.end(id) }
        // The declared length was signed, and the server reads that many bytes: a body of
        // another length fails the checksum.
        let body = try await request.body.collect(upTo: length)
        var bytes = Data(buffer: body)
        guard bytes.count == length, Data(SHA256.hash(data: bytes)).base64EncodedString() == checksum else {
            throw APIError(
                .badRequest, code: "UPLOAD_MISMATCH",
                message: "The body does not have the signed length and SHA-256")
        }
        try await files.put(key: key, body: bytes, contentType: type)
        bytes = Data()
        // Two PUTs of one URL at once (on two instances) both get here with the same bytes; one
        // completes it. The other's file may land after the upload was processed and its key
        // swept, so it is queued again.
        let (media, completed) = try await self.media.complete(row)
        guard completed else {
            try await store.discardUpload(id)
            throw MediaErrors.uploadUsed
        }
        return try Response.data(media, status: .created, requestId: context.requestId)
    }

    private func get(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard let id = context.parameters.get("mediaId", as: UUID.self), let name = context.parameters.get("name")
        else { throw MediaErrors.downloadInvalid }
        let key = MediaKeys.variant(id, name)
        let query = request.uri.queryParameters
        guard MediaKeys.isValid(key), let expires = query.get("expires").flatMap({ Int($0) }),
            let type = query.get("type"), let signature = query.get("signature"),
            expires >= Int(Date().timeIntervalSince1970),
            files.verify(LocalObjectStore.downloadFacts(key: key, expires: expires, type: type), signature: signature)
        else { throw MediaErrors.downloadInvalid }
        guard let bytes = try await files.get(key: key, maxBytes: MediaPurpose.post.maxBytes * 4) else {
            throw MediaErrors.notFound
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: type,
                .cacheControl: "private, max-age=\(max(0, expires - Int(Date().timeIntervalSince1970)))",
                .eTag: "\"\(SHA256.hash(data: bytes).prefix(12).lowerHex)\"",
                // Served bytes are what processing wrote, and are shown as their type only.
                .contentTypeOptions: "nosniff",
                .contentSecurityPolicy: "default-src 'none'; sandbox",
            ],
            body: .init(byteBuffer: ByteBuffer(data: bytes)))
    }
}

// swift-format-ignore: NeverForceUnwrap
// The names are valid header tokens, so the failable initialiser cannot fail.
extension HTTPField.Name {
    /// The body's SHA-256 (base64) on an upload, named as S3 names it.
    package static let checksumSHA256 = Self(LocalObjectStore.checksumHeader)!
    package static let contentTypeOptions = Self("X-Content-Type-Options")!
    package static let contentSecurityPolicy = Self("Content-Security-Policy")!
}
