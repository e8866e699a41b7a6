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
        let started = ContinuousClock.now
        let made: Made
        do {
            // Hashing, sniffing and decoding all run on the pool, never on the consumer's thread.
            made = try await blocking.run { [maxPixels] in
                defer { Vips.threadDone() }
                return try Self.made(from: bytes, for: row, maxPixels: maxPixels)
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
        Timer(label: "orbitcove_media_processing_seconds", dimensions: [("type", made.type)])
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
        let announced: MediaProcessed?
        switch outcome {
        case .skip:
            // A redelivery, or a row deleted meanwhile: an earlier attempt may have stored
            // renditions whose record never committed, and only a ready row's are served.
            if try await !MediaStore.isReady(id, on: connection, logger: logger) {
                try await MediaStore.discard(Self.renditionKeys(of: id), on: connection, logger: logger)
            }
            return
        case .ready(let width, let height, let renditions):
            announced = try await MediaStore.recordReady(
                id, width: width, height: height, renditions: renditions, on: connection, logger: logger)
        case .failed(let reason):
            logger.notice(
                "media failed", metadata: ["mediaId": .string(id.lowercasedString), "reason": .string(reason)])
            announced = try await MediaStore.recordFailed(id, reason: reason, on: connection, logger: logger)
        }
        // The upload is never served, so it goes once processed; renditions go too unless the
        // row is ready with them (a failure, or a row deleted meanwhile). A row another delivery
        // made ready keeps them: they are the same keys.
        var garbage = [MediaKeys.upload(id)]
        let served =
            if let announced { announced.status == .ready } else {
                try await MediaStore.isReady(id, on: connection, logger: logger)
            }
        if !served { garbage += Self.renditionKeys(of: id) }
        try await MediaStore.discard(garbage, upload: id, on: connection, logger: logger)
        guard let announced else { return }
        try await Outbox.enqueue(
            MessageEnvelope(communityId: announced.communityId, actorId: announced.uploadedBy, data: announced),
            to: .notifications, on: connection, logger: logger)
    }

    /// Every key a rendition of `id` can have: what an attempt may have stored.
    static func renditionKeys(of id: UUID) -> [String] {
        [
            "thumb.jpg", "thumb.webp", "large.jpg", "large.webp", "original.jpg", "original.png", "original.webp",
            "original.pdf",
        ].map { MediaKeys.variant(id, $0) }
    }

    /// A file refused for what it is (too many pixels), not for a decoding error.
    struct Refusal: Error {
        var reason: String
    }

    struct Made: Sendable {
        /// The type the bytes are.
        var type: String
        var width: Int
        var height: Int
        var files: [(String, MediaRendition, Data)]
    }

    /// Checks the bytes are what was declared and makes what is served of them: a PDF is
    /// served as it came, an image as its renditions. Runs on a blocking thread.
    static func made(from bytes: Data, for row: MediaRow, maxPixels: Int) throws -> Made {
        guard bytes.count == row.media.sizeBytes, Data(SHA256.hash(data: bytes)) == row.checksum else {
            throw Refusal(reason: "the stored bytes do not have the declared size and SHA-256")
        }
        guard let sniffed = MediaSniffer.type(of: bytes) else {
            throw Refusal(reason: "the file is not a JPEG, PNG, HEIC, WebP, GIF or PDF")
        }
        guard MediaSniffer.matches(declared: row.media.mimeType, sniffed: sniffed),
            row.media.purpose.acceptedTypes.contains(sniffed)
        else {
            throw Refusal(reason: "it was declared as \(row.media.mimeType) but the file is \(sniffed)")
        }
        guard sniffed != MediaType.pdf else {
            let original = MediaRendition(
                key: MediaKeys.variant(row.media.id, "original.pdf"), contentType: MediaType.pdf, width: 0, height: 0,
                bytes: bytes.count)
            return Made(type: sniffed, width: 0, height: 0, files: [("original/pdf", original, bytes)])
        }
        return try renditions(of: bytes, id: row.media.id, type: sniffed, maxPixels: maxPixels)
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
        return Made(type: type, width: shown.width, height: shown.height, files: files)
    }
}
