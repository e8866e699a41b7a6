import Foundation

/// What an uploaded file is for; it decides who may see it, which types and sizes are accepted,
/// and whether it belongs to a community (an avatar belongs to its user).
package enum MediaPurpose: String, Codable, Sendable, CaseIterable {
    case post
    case receipt
    case avatar
    case communityIcon = "community_icon"

    /// Avatars are their user's; everything else is a community's.
    package var belongsToCommunity: Bool { self != .avatar }

    /// The declared types accepted: photos for everything, PDFs for receipts too.
    package var acceptedTypes: [String] {
        switch self {
        case .receipt: MediaType.images + [MediaType.pdf]
        default: MediaType.images
        }
    }

    /// The largest upload accepted, in bytes.
    package var maxBytes: Int {
        switch self {
        case .post: 25 * 1024 * 1024
        case .receipt: 15 * 1024 * 1024
        case .avatar, .communityIcon: 10 * 1024 * 1024
        }
    }
}

/// The declared MIME types the media service accepts.
package enum MediaType {
    package static let jpeg = "image/jpeg"
    package static let png = "image/png"
    package static let heic = "image/heic"
    package static let heif = "image/heif"
    package static let webp = "image/webp"
    package static let gif = "image/gif"
    package static let pdf = "application/pdf"
    package static let images = [jpeg, png, heic, heif, webp, gif]
}

/// Where a file is in its life.
package enum MediaStatus: String, Codable, Sendable, CaseIterable {
    /// The upload URL was handed out; the bytes have not arrived.
    case pending
    /// The bytes arrived with the declared size and checksum; processing is queued.
    case uploaded
    /// Variants are made; `GET /api/v1/media/{id}` redirects to them.
    case ready
    /// Processing refused the file; `failureReason` says why.
    case failed
}

/// The renditions served: `thumb` (200 px), `large` (1,080 px) and `original` (full size).
/// All have their orientation applied, are sRGB and carry no metadata.
package enum MediaVariantName: String, Codable, Sendable, CaseIterable {
    case thumb
    case large
    case original
}

/// One stored rendition.
package struct MediaRendition: Codable, Sendable, Equatable {
    package var key: String
    package var contentType: String
    package var width: Int
    package var height: Int
    package var bytes: Int

    package init(key: String, contentType: String, width: Int, height: Int, bytes: Int) {
        self.key = key
        self.contentType = contentType
        self.width = width
        self.height = height
        self.bytes = bytes
    }
}

/// An uploaded file as members see it. Bytes are fetched through `GET /api/v1/media/{id}`.
package struct Media: Codable, Sendable, Equatable {
    package var id: UUID
    /// Null for an avatar, which belongs to its user.
    @ExplicitNull package var communityId: UUID?
    package var uploadedBy: UUID
    package var purpose: MediaPurpose
    package var filename: String
    package var mimeType: String
    package var sizeBytes: Int
    package var status: MediaStatus
    @ExplicitNull package var failureReason: String?
    @ExplicitNull package var width: Int?
    @ExplicitNull package var height: Int?
    /// The variants that can be fetched (`thumb`, `large`, `original`), once ready.
    package var variants: [MediaVariantName]
    package var createdAt: Date

    package init(
        id: UUID, communityId: UUID?, uploadedBy: UUID, purpose: MediaPurpose, filename: String, mimeType: String,
        sizeBytes: Int, status: MediaStatus, failureReason: String?, width: Int?, height: Int?,
        variants: [MediaVariantName], createdAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.uploadedBy = uploadedBy
        self.purpose = purpose
        self.filename = filename
        self.mimeType = mimeType
        self.sizeBytes = sizeBytes
        self.status = status
        self.failureReason = failureReason
        self.width = width
        self.height = height
        self.variants = variants
        self.createdAt = createdAt
    }
}

/// The answer to `POST /api/v1/media/upload`: the new row and the one request that uploads it.
package struct MediaUpload: Codable, Sendable, Equatable {
    package struct Request: Codable, Sendable, Equatable {
        package var method: String
        package var url: String
        /// Send exactly these headers (the signature covers them).
        package var headers: [String: String]
        package var expiresAt: Date

        package init(method: String, url: String, headers: [String: String], expiresAt: Date) {
            self.method = method
            self.url = url
            self.headers = headers
            self.expiresAt = expiresAt
        }
    }

    package var media: Media
    package var upload: Request
    /// `POST` here once the upload answered (the local store completes on its own; S3 cannot).
    package var completeUrl: String

    package init(media: Media, upload: Request, completeUrl: String) {
        self.media = media
        self.upload = upload
        self.completeUrl = completeUrl
    }
}

/// An upload arrived whole: the media service's worker makes its variants.
package struct MediaUploaded: MessagePayload, Equatable {
    package static let messageType = "media.uploaded"
    package static let messageVersion = 1

    package var mediaId: UUID

    package init(mediaId: UUID) { self.mediaId = mediaId }
}

/// A file was processed: ready to show, or failed with a reason. Nobody is notified; the
/// post that shows it and the realtime stream use it.
package struct MediaProcessed: MessagePayload, Equatable {
    package static let messageType = "media.processed"
    package static let messageVersion = 1

    package var mediaId: UUID
    @ExplicitNull package var communityId: UUID?
    package var uploadedBy: UUID
    package var purpose: MediaPurpose
    package var status: MediaStatus
    @ExplicitNull package var failureReason: String?

    package init(
        mediaId: UUID, communityId: UUID?, uploadedBy: UUID, purpose: MediaPurpose, status: MediaStatus,
        failureReason: String?
    ) {
        self.mediaId = mediaId
        self.communityId = communityId
        self.uploadedBy = uploadedBy
        self.purpose = purpose
        self.status = status
        self.failureReason = failureReason
    }
}
