import Crypto
import Foundation
import Logging
import Metrics
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The `media-processing` worker: for each `media.uploaded`, reads the upload, checks it is
/// what was declared, makes the renditions with libvips and stores them (``prepare(_:logger:)``,
/// outside any transaction, the image work on the kit's blocking pool), then records the
/// outcome, queues the upload's removal and announces it (``apply(_:_:on:logger:)``, in the
/// inbox's transaction). A file that cannot be processed fails with a reason and the worker
/// goes on; only a store or database that cannot be reached makes the message retry.
struct MediaProcessor: Sendable {
    let store: MediaStore
    let objects: any ObjectStore
    let blocking: BlockingPool
    let maxPixels: Int

    enum Outcome: Sendable {
        /// Nothing to do: processed before, deleted, or not uploaded.
        case skip
        case ready(width: Int, height: Int, renditions: [String: MediaRendition])
        case failed(String)
    }

    /// The sizes served: thumbnails for lists, large for a phone's screen.
    static let sizes: [(MediaVariantName, Int)] = [(.thumb, 200), (.large, 1080)]

    func prepare(_ envelope: MessageEnvelope<MediaUploaded>, logger: Logger) async throws -> Outcome {
        guard let row = try await store.find(system: envelope.data.mediaId), row.media.status == .uploaded else {
            return .skip
        }
        guard let bytes = try await objects.get(key: row.storagePath, maxBytes: row.media.sizeBytes) else {
            return .failed("the upload is missing from storage")
        }
        guard bytes.count == row.media.sizeBytes, Data(SHA256.hash(data: bytes)) == row.checksum else {
            return .failed("the stored bytes do not have the declared size and SHA-256")
        }
        guard let sniffed = MediaSniffer.type(of: bytes) else {
            return .failed("the file is not a JPEG, PNG, HEIC, WebP, GIF or PDF")
        }
        guard MediaSniffer.matches(declared: row.media.mimeType, sniffed: sniffed),
            row.media.purpose.acceptedTypes.contains(sniffed)
        else {
            return .failed("it was declared as \(row.media.mimeType) but the file is \(sniffed)")
        }
        let started = ContinuousClock.now
        let made: Made
        do {
            made =
                sniffed == MediaType.pdf
                ? Made(
                    width: 0, height: 0,
                    files: [
                        (
                            "original/pdf",
                            MediaRendition(
                                key: MediaKeys.variant(row.media.id, "original.pdf"), contentType: MediaType.pdf,
                                width: 0,
                                height: 0, bytes: bytes.count), bytes
                        )
                    ])
                : try await blocking.run { [maxPixels] in
                    defer { Vips.threadDone() }
                    return try Self.renditions(of: bytes, id: row.media.id, type: sniffed, maxPixels: maxPixels)
                }
        } catch let refusal as Refusal {
            return .failed(refusal.reason)
        } catch let failure as Vips.Failure {
            return .failed("the image could not be decoded (\(failure.description.prefix(200)))")
        }
        for (_, rendition, data) in made.files {
            try await objects.put(key: rendition.key, body: data, contentType: rendition.contentType)
        }
        let elapsed = (ContinuousClock.now - started).components
        Timer(label: "orbitcove_media_processing_seconds", dimensions: [("type", sniffed)])
            .recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        return .ready(
            width: made.width, height: made.height,
            renditions: Dictionary(uniqueKeysWithValues: made.files.map { ($0.0, $0.1) }))
    }

    func apply(
        _ envelope: MessageEnvelope<MediaUploaded>, _ outcome: Outcome, on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let id = envelope.data.mediaId
        let update: PostgresQuery
        var orphans: [String] = []
        switch outcome {
        case .skip:
            return
        case .ready(let width, let height, let renditions):
            let variants = String(decoding: try JSONCoding.encoder.encode(renditions), as: UTF8.self)
            update = """
                UPDATE media SET status = 'ready', width = \(width > 0 ? width : nil), height = \(height > 0 ? height : nil),
                       variants = \(variants)::jsonb, thumbnail_path = \(renditions["thumb/jpeg"]?.key), processed_at = now()
                WHERE id = \(id) AND status = 'uploaded' AND deleted_at IS NULL
                RETURNING community_id, uploaded_by, purpose, status, failure_reason, storage_path
                """
            orphans = renditions.values.map(\.key)
        case .failed(let reason):
            logger.notice(
                "media failed", metadata: ["mediaId": .string(id.lowercasedString), "reason": .string(reason)])
            update = """
                UPDATE media SET status = 'failed', failure_reason = \(reason), processed_at = now()
                WHERE id = \(id) AND status = 'uploaded' AND deleted_at IS NULL
                RETURNING community_id, uploaded_by, purpose, status, failure_reason, storage_path
                """
        }
        var announced: MediaProcessed?
        var upload: String?
        for try await row in try await connection.query(update, logger: logger) {
            var cells = RowReader(row)
            let community: UUID? = try cells.next("community_id")
            let uploader: UUID = try cells.next("uploaded_by")
            let purpose: String = try cells.next("purpose")
            let status: String = try cells.next("status")
            let reason: String? = try cells.next("failure_reason")
            upload = try cells.next("storage_path")
            announced = MediaProcessed(
                mediaId: id, communityId: community, uploadedBy: uploader,
                purpose: MediaPurpose(rawValue: purpose) ?? .post,
                status: MediaStatus(rawValue: status) ?? .failed, failureReason: reason)
        }
        // Processed (or deleted meanwhile): the upload is not served, so it goes; renditions
        // written for a row that was deleted meanwhile go too.
        var garbage = upload.map { [$0] } ?? [MediaKeys.upload(id)]
        if announced == nil { garbage += orphans }
        try await connection.query(
            "INSERT INTO media_garbage (storage_key) SELECT unnest(\(garbage)::text[]) ON CONFLICT DO NOTHING",
            logger: logger)
        guard let announced else { return }
        try await Outbox.enqueue(
            MessageEnvelope(communityId: announced.communityId, actorId: announced.uploadedBy, data: announced),
            to: .notifications, on: connection, logger: logger)
    }

    /// A file refused for what it is (too many pixels), not for a decoding error.
    struct Refusal: Error {
        var reason: String
    }

    struct Made: Sendable {
        var width: Int
        var height: Int
        var files: [(String, MediaRendition, Data)]
    }

    /// Reads the header, refuses an image too large before decoding any pixel, then makes each
    /// rendition. Runs on a blocking thread.
    static func renditions(of bytes: Data, id: UUID, type: String, maxPixels: Int) throws -> Made {
        let header = try Vips.header(bytes)
        let pixels = header.width * header.height
        guard header.width > 0, header.height > 0, pixels <= maxPixels, header.width <= 30_000,
            header.height <= 30_000
        else {
            throw Refusal(
                reason: "the image is \(header.width)×\(header.height) pixels; at most \(maxPixels) pixels are accepted"
            )
        }
        var files: [(String, MediaRendition, Data)] = []
        func add(_ variant: MediaVariantName, _ format: Vips.Format, _ data: Data) throws {
            let shown = try Vips.header(data)
            let name = "\(variant.rawValue).\(format.fileExtension)"
            files.append(
                (
                    "\(variant.rawValue)/\(format.name)",
                    MediaRendition(
                        key: MediaKeys.variant(id, name), contentType: format.contentType, width: shown.width,
                        height: shown.height, bytes: data.count),
                    data
                ))
        }
        for (variant, size) in sizes {
            try add(variant, .jpeg, try Vips.thumbnail(bytes, size: size, format: .jpeg, quality: 82))
            try add(variant, .webp, try Vips.thumbnail(bytes, size: size, format: .webp, quality: 80))
        }
        // The original keeps its family where browsers show it; HEIC and GIF stills become JPEG and PNG.
        let format: Vips.Format =
            switch type {
            case MediaType.png, MediaType.gif: .png
            case MediaType.webp: .webp
            default: .jpeg
            }
        try add(.original, format, try Vips.original(bytes, format: format, quality: 90))
        let shown = header.shownSize
        return Made(width: shown.width, height: shown.height, files: files)
    }
}
