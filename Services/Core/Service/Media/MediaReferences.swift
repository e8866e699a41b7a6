import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Uploaded media a post or a ledger entry names: only this community's, uploaded for that
/// use (a post's photo, a receipt), not deleted nor failed (one still being processed may be
/// named: it shows once ready; the media service's rows; the database says
/// the same for posts, migration 0041, and for a receipt's community, 0039).
enum MediaReferences {
    /// `ids` without repeats, in order, when each is this community's, uploaded for `purpose`;
    /// otherwise a validation error on `field` naming the others.
    static func check(
        _ ids: [UUID], for purpose: MediaPurpose, in communityId: UUID, field: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID] {
        var seen = Set<UUID>()
        let wanted = ids.filter { seen.insert($0).inserted }
        guard !wanted.isEmpty else { return [] }
        var found = Set<UUID>()
        let rows = try await connection.query(
            """
            SELECT id FROM media
            WHERE id = ANY(\(wanted)) AND community_id = \(communityId) AND purpose = \(purpose.rawValue)
              AND deleted_at IS NULL AND status <> 'failed'
            """, logger: logger)
        for try await id in rows.decode(UUID.self) { found.insert(id) }
        let unknown = wanted.filter { !found.contains($0) }
        guard unknown.isEmpty else {
            throw APIError.validation([
                field: "names media that is not a \(purpose.rawValue) upload of this community (or failed): "
                    + unknown.map(\.lowercasedString).joined(separator: ", ")
            ])
        }
        return wanted
    }
}
