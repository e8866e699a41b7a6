import Foundation
import OrbitCoveModels
import PostgresNIO

/// A media row as the service needs it: what members see, and where its bytes are.
package struct MediaRow: Sendable {
    package var media: Media
    package var storagePath: String
    package var checksum: Data
    /// Renditions by `<variant>/<format>` (`thumb/jpeg`, `original/png`).
    package var renditions: [String: MediaRendition]
}

/// The `media` columns every reader selects, and how a row becomes a ``MediaRow``: the media
/// service's store and core's sync read media the same way.
///
/// ```swift
/// SELECT \(unescaped: MediaRows.columns) FROM media WHERE ...
/// ```
package enum MediaRows {
    package static let columns = """
        id, community_id, uploaded_by, purpose, filename, mime_type, size_bytes, status, failure_reason,
        width, height, variants::text AS variants, created_at, storage_path, encode(checksum, 'hex') AS checksum
        """

    package static func read(_ row: PostgresRow) throws -> MediaRow {
        var cells = RowReader(row)
        let id: UUID = try cells.next("id")
        let community: UUID? = try cells.next("community_id")
        let uploader: UUID = try cells.next("uploaded_by")
        let purpose: String = try cells.next("purpose")
        let filename: String = try cells.next("filename")
        let mimeType: String = try cells.next("mime_type")
        let size: Int = try cells.next("size_bytes")
        let status: String = try cells.next("status")
        let reason: String? = try cells.next("failure_reason")
        let width: Int? = try cells.next("width")
        let height: Int? = try cells.next("height")
        let variants: String = try cells.next("variants")
        let createdAt: Date = try cells.next("created_at")
        let storagePath: String = try cells.next("storage_path")
        let checksum: String = try cells.next("checksum")
        let renditions = try JSONCoding.decoder.decode([String: MediaRendition].self, from: Data(variants.utf8))
        let names = Set(renditions.keys.compactMap { MediaVariantName(rawValue: String($0.prefix { $0 != "/" })) })
        return MediaRow(
            media: Media(
                id: id, communityId: community, uploadedBy: uploader, purpose: MediaPurpose(rawValue: purpose) ?? .post,
                filename: filename, mimeType: mimeType, sizeBytes: size,
                status: MediaStatus(rawValue: status) ?? .failed,
                failureReason: reason, width: width, height: height,
                variants: MediaVariantName.allCases.filter(names.contains), createdAt: createdAt),
            storagePath: storagePath, checksum: Data(hex: checksum) ?? Data(), renditions: renditions)
    }
}
