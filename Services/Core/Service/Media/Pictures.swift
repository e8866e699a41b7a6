import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A user's avatar or a community's icon, given as an http(s) URL or as an upload (issue 24).
/// An upload is written as its address too (`…/api/v1/media/{id}?variant=thumb`, which
/// redirects those who may see it to a signed URL), so every reader that shows a picture shows
/// it unchanged. One picture at a time: a URL clears the upload, and clearing the upload clears
/// the address it wrote (migration 0042; the database clears both when the upload goes).
struct PictureChange: Sendable {
    /// `keep`, or `write` the value (`nil` clears).
    var mediaTag = "keep"
    var mediaId: UUID?
    /// `keep`, `write` the value, or `unpicture`: clear the URL if it was the upload's address.
    var urlTag = "keep"
    var url: String?

    var isKept: Bool { mediaTag == "keep" && urlTag == "keep" }

    /// The upload this change names, to be checked before it is written.
    var named: UUID? { mediaTag == "write" ? mediaId : nil }

    /// The address an upload is served at through the gateway.
    static func address(of id: UUID, publicURL: String) -> String {
        "\(publicURL)/api/v1/media/\(id.lowercasedString)?variant=thumb"
    }
}

extension FieldReader {
    /// The picture in `urlKey` (an http(s) URL) or `mediaKey` (an upload's id), not both.
    mutating func picture(url urlKey: String, media mediaKey: String, publicURL: String) -> PictureChange {
        let url = self.url(urlKey)
        let media = id(mediaKey)
        var change = PictureChange()
        switch (media, url) {
        case (.set, .set):
            problems[mediaKey] = "names a picture as \(urlKey) does: send one of them"
        case (.set(let id), _):
            (change.mediaTag, change.mediaId) = ("write", id)
            (change.urlTag, change.url) = ("write", PictureChange.address(of: id, publicURL: publicURL))
        case (_, .set(let address)):
            (change.mediaTag, change.urlTag, change.url) = ("write", "write", address)
        case (_, .clear):
            (change.mediaTag, change.urlTag) = ("write", "write")
        case (.clear, .keep):
            (change.mediaTag, change.urlTag) = ("write", "unpicture")
        case (.keep, .keep):
            break
        }
        return change
    }
}

extension MediaReferences {
    /// Checks that `change` names, if any, is `owner`'s own upload for `purpose` (a user's
    /// `avatar`, a community's `community_icon`), processed (`ready`, so it cannot fail later)
    /// and not deleted; otherwise a validation error on `field`.
    static func check(
        _ change: PictureChange, for purpose: MediaPurpose, of owner: UUID, field: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let id = change.named else { return }
        let ownedBy = purpose == .avatar ? "uploaded_by" : "community_id"
        let rows = try await connection.query(
            """
            SELECT 1 FROM media
            WHERE id = \(id) AND purpose = \(purpose.rawValue) AND \(unescaped: ownedBy) = \(owner)
              AND status = 'ready' AND deleted_at IS NULL
            """, logger: logger)
        for try await _ in rows { return }
        throw APIError.validation([
            field: "names no \(purpose.rawValue) upload of \(purpose == .avatar ? "yours" : "this community") "
                + "that is processed (ready) and not deleted"
        ])
    }
}

extension MediaReferences {
    /// The database's names for its refusals of named media (migrations 0039–0043), by the
    /// field that names them: met only when an upload is deleted between the check above and
    /// the write, which then answers as the check would.
    static let refusals = [
        "users_avatar_media": "avatarMediaId", "communities_icon_media": "iconMediaId",
        "posts_media_ids": "mediaIds", "transactions_receipt_media": "receiptMediaId",
    ]

    /// Runs a write that names media, answering the database's refusal of it (a foreign-key
    /// violation named in ``refusals``) as a validation error on its field.
    static func refusing<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PSQLError
            where error.serverInfo?[.sqlState] == "23503"
            && refusals[error.serverInfo?[.constraintName] ?? ""] != nil
        {
            let field = refusals[error.serverInfo?[.constraintName] ?? ""] ?? "media"
            throw APIError.validation([field: "names media that was deleted meanwhile, or is not one it may name"])
        }
    }
}
