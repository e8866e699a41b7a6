import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// Uploaded media a post or a ledger entry names: only this community's, not deleted (the
/// media service's rows; the database's second wall says the same, migration 0039).
enum MediaReferences {
    /// `ids` without repeats, in order, when each is this community's; otherwise a validation
    /// error on `field` naming the others.
    static func check(
        _ ids: [UUID], in communityId: UUID, field: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID] {
        var seen = Set<UUID>()
        let wanted = ids.filter { seen.insert($0).inserted }
        guard !wanted.isEmpty else { return [] }
        var found = Set<UUID>()
        let rows = try await connection.query(
            """
            SELECT id FROM media WHERE id = ANY(\(wanted)) AND community_id = \(communityId) AND deleted_at IS NULL
            """, logger: logger)
        for try await id in rows.decode(UUID.self) { found.insert(id) }
        let unknown = wanted.filter { !found.contains($0) }
        guard unknown.isEmpty else {
            throw APIError.validation([
                field: "names media that is not this community's: "
                    + unknown.map(\.lowercasedString).joined(separator: ", ")
            ])
        }
        return wanted
    }
}
