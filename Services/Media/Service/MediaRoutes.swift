import Crypto
import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/media`: ask for an upload URL, say it is done, fetch a rendition, read the row,
/// delete. Membership is checked through the community gate (as core's routes do) and rows
/// are read under row-level security as the caller, so another community's media is `404`.
struct MediaRoutes {
    let store: MediaStore
    let objects: any ObjectStore
    let gate: CommunityGate
    let writes: CommunityWrites
    let settings: MediaSettings

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/media/upload") { request, context in
            try await upload(request, context: context)
        }
        router.post("/api/v1/media/:mediaId/complete") { _, context in
            let user = try context.requireUser()
            let row = try await visible(context, as: user)
            guard row.media.uploadedBy == user else {
                throw APIError(
                    .forbidden, code: "FORBIDDEN", message: "Only the uploader says an upload is complete")
            }
            let media = try await complete(row).media
            return try Response.data(media, status: .accepted, requestId: context.requestId)
        }
        router.get("/api/v1/media/:mediaId/details") { _, context in
            let row = try await visible(context, as: try context.requireUser())
            return try Response.data(row.media, requestId: context.requestId, headers: [.cacheControl: "no-store"])
        }
        router.get("/api/v1/media/:mediaId") { request, context in
            try await fetch(request, context: context)
        }
        router.delete("/api/v1/media/:mediaId") { request, context in
            let user = try context.requireUser()
            let row = try await visible(context, as: user)
            if let community = row.media.communityId {
                let granted = try await gate.resolve(community, by: user)
                try granted.require(
                    .deleteMedia, on: OwnedContent(createdBy: row.media.uploadedBy, createdAt: row.media.createdAt))
            } else if row.media.uploadedBy != user {
                throw APIError(.forbidden, code: "FORBIDDEN", message: "An avatar is deleted by its owner only")
            }
            guard
                try await store.delete(
                    row, as: user, writes: writes, request: RequestFacts(request, context))
            else { throw MediaErrors.notFound }
            return Response(status: .noContent)
        }
    }

    private func visible(_ context: AppRequestContext, as user: UUID) async throws -> MediaRow {
        guard let id = context.parameters.get("mediaId", as: UUID.self),
            let row = try await store.find(id, as: user)
        else { throw MediaErrors.notFound }
        return row
    }

    /// What uploading for `purpose` asks of a member: posting, adding expenses, editing settings.
    static func action(for purpose: MediaPurpose) -> CommunityAction? {
        switch purpose {
        case .post: .createPost
        case .receipt: .addExpense
        case .communityIcon: .editSettings
        case .avatar: nil
        }
    }

    private func upload(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        var reader = try await FieldReader.read(
            request, context: context,
            allowed: ["communityId", "filename", "mimeType", "sizeBytes", "purpose", "sha256"], nullClears: false)
        let purpose = reader.choice("purpose", as: MediaPurpose.self).value
        if reader.fields["purpose"] == nil { reader.problems["purpose"] = "is required" }
        // Both taken exactly as sent: a name with a newline or a type with a space is refused,
        // not trimmed into shape.
        let filename = reader.line("filename", maxLength: 255, required: true).value
        if case .string(let raw) = reader.fields["filename"], filename != nil,
            raw != filename
                || raw.unicodeScalars.contains(where: {
                    // Format characters too: a right-to-left override shows "gnp.exe" as "exe.png".
                    $0 == "/" || $0 == "\\"
                        || [.control, .format, .lineSeparator, .paragraphSeparator]
                            .contains($0.properties.generalCategory)
                })
        {
            reader.problems["filename"] =
                "must be a file name, without path separators, control or formatting characters, or spaces around it"
        }
        var mimeType = reader.text("mimeType", maxLength: 100, required: true).value
        if case .string(let raw) = reader.fields["mimeType"] { mimeType = mimeType.map { _ in raw } }
        let size = reader.integer("sizeBytes", in: 1...MediaPurpose.post.maxBytes).value
        if reader.fields["sizeBytes"] == nil { reader.problems["sizeBytes"] = "is required" }
        var community: UUID?
        switch reader.fields["communityId"] {
        case .string(let text) where UUID(uuidString: text) != nil: community = UUID(uuidString: text)
        case nil: break
        default: reader.problems["communityId"] = "must be a community id"
        }
        var checksum: Data?
        switch reader.fields["sha256"] {
        case .string(let text) where text.utf8.count == 64: checksum = Data(hex: text)
        default: break
        }
        if checksum == nil { reader.problems["sha256"] = "must be the file's SHA-256, 64 hexadecimal digits" }
        if let purpose {
            if let mimeType, !purpose.acceptedTypes.contains(mimeType) {
                reader.problems["mimeType"] =
                    "must be one of \(purpose.acceptedTypes.joined(separator: ", ")) for \(purpose.rawValue)"
            }
            if let size, size > purpose.maxBytes {
                reader.problems["sizeBytes"] = "must be at most \(purpose.maxBytes) bytes for \(purpose.rawValue)"
            }
            if purpose.belongsToCommunity, community == nil, reader.problems["communityId"] == nil {
                reader.problems["communityId"] = "is required for \(purpose.rawValue)"
            }
            if !purpose.belongsToCommunity, reader.fields["communityId"] != nil {
                reader.problems["communityId"] = "must be left out: an avatar belongs to its user"
            }
        }
        try reader.check()
        guard let purpose, let filename, let mimeType, let size, let checksum else { throw APIError.badRequest("") }
        if let community, let action = Self.action(for: purpose) {
            _ = try await gate.require(action, in: community, by: user)
        }
        let id = UUID()
        let expires = Date().addingTimeInterval(Double(settings.uploadSeconds))
        let signed = try objects.uploadRequest(
            key: MediaKeys.upload(id), contentType: mimeType, size: size, sha256: checksum, expires: expires)
        let row: MediaRow
        do {
            row = try await store.create(
                id: id, by: user, community: community, purpose: purpose, filename: filename, mimeType: mimeType,
                size: size, sha256: checksum, uploadExpires: expires)
        } catch {
            // The wall refuses an upload to a community the caller left meanwhile.
            guard let community else { throw error }
            try await gate.rethrow(error, ofAWriteIn: community, by: user)
        }
        let answer = MediaUpload(
            media: row.media,
            upload: .init(method: signed.method, url: signed.url, headers: signed.headers, expiresAt: expires),
            completeUrl: "/api/v1/media/\(id.lowercasedString)/complete")
        return try Response.data(
            answer, status: .created, requestId: context.requestId,
            headers: [
                .location: "/api/v1/media/\(id.lowercasedString)",
                // The upload URL is a credential until it is used: nothing keeps it.
                .cacheControl: "no-store",
            ])
    }

    /// Checks the stored bytes against the declaration and queues processing; for an upload
    /// already complete, says where it is. `completed` is whether this call completed it (of
    /// two at once, one does). Bytes whose uploader left the community, or whose account was
    /// deleted, since the URL was given are refused and discarded.
    func complete(_ row: MediaRow) async throws -> (media: Media, completed: Bool) {
        guard row.media.status == .pending else { return (row.media, false) }
        let stored: StoredObject?
        do {
            stored = try await objects.head(key: row.storagePath)
        } catch {
            // The store is away (S3 unreachable, a disk error): the client tries again.
            throw APIError.unavailable("The file store cannot be reached; try again shortly")
        }
        guard let stored, stored.size == row.media.sizeBytes, stored.sha256 == nil || stored.sha256 == row.checksum
        else { throw MediaErrors.notUploaded }
        let marked = try await store.markUploaded(row.media.id)
        switch marked {
        case .marked, .notPending:
            break
        case .uploaderLeft:
            try await store.discardUpload(row.media.id)
            throw CommunityGate.notFound
        case .accountDeleted:
            try await store.discardUpload(row.media.id)
            throw APIError.accountDeleted
        }
        return (try await store.find(system: row.media.id)?.media ?? row.media, marked == .marked)
    }

    private func fetch(_ request: Request, context: AppRequestContext) async throws -> Response {
        let row = try await visible(context, as: try context.requireUser())
        let query = request.uri.queryParameters
        var problems: [String: String] = [:]
        var variant = MediaVariantName.original
        if let text = query.get("variant") {
            if let name = MediaVariantName(rawValue: text) {
                variant = name
            } else {
                problems["variant"] = "must be one of thumb, large, original"
            }
        }
        let format = query.get("format")
        if let format, !["jpeg", "webp", "png", "pdf"].contains(format) {
            problems["format"] = "must be one of jpeg, webp, png, pdf"
        }
        if !problems.isEmpty { throw APIError.validation(problems) }
        switch row.media.status {
        case .pending, .uploaded:
            return try Response.data(
                row.media, status: .accepted, requestId: context.requestId,
                headers: [.retryAfter: "2", .cacheControl: "no-store"])
        case .failed:
            throw MediaErrors.failed(row.media.failureReason ?? "unknown")
        case .ready:
            break
        }
        let rendition =
            if let format { row.renditions["\(variant.rawValue)/\(format)"] } else {
                row.renditions["\(variant.rawValue)/jpeg"]
                    ?? row.renditions.first(where: { $0.key.hasPrefix("\(variant.rawValue)/") })?.value
            }
        guard let rendition else { throw MediaErrors.noSuchVariant }
        // The signed URL's expiry moves in steps of half its life, so every redirect within a
        // step is the same URL (a client's cache keeps one copy) and lives at least half its
        // life. The tag names the step: a 304 only ever confirms a URL that is still the
        // current one, and the cache keeps it no longer than it lives.
        let now = Int(Date().timeIntervalSince1970)
        let step = max(60, settings.downloadSeconds / 2)
        let expires = (now / step + 2) * step
        let tag = "\"\(row.checksum.prefix(8).lowerHex)-\(rendition.key.split(separator: "/").last ?? "")-\(expires)\""
        var headers: HTTPFields = [
            .eTag: tag, .cacheControl: "private, max-age=\(max(0, expires - now - 60))",
        ]
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == tag })
        {
            return Response(status: .notModified, headers: headers)
        }
        headers[.location] = try objects.downloadURL(
            key: rendition.key, contentType: rendition.contentType,
            expires: Date(timeIntervalSince1970: Double(expires)))
        return Response(status: .found, headers: headers)
    }
}
