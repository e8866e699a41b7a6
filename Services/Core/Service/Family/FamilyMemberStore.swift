import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Dependants a parent manages (`/me/family-members`): they never sign in, and act in RSVPs
/// and attendance through the parent's account. Row-level security keeps each parent's own.
struct FamilyMemberStore: Sendable {
    let database: Database
    let logger: Logger

    static let maximum = 20
    static let notFound = APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member")

    func list(of userId: UUID, after cursor: PageCursor?, limit: Int) async throws -> [(FamilyMember, PageCursor)] {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT id, name, avatar_url, created_at FROM family_members
                WHERE user_id = \(userId)
                  AND (\(cursor == nil) OR (created_at, id) > (\(cursor?.exactCreatedAt ?? .unused), \(cursor?.id ?? .random())))
                ORDER BY created_at, id
                LIMIT \(limit)
                """, logger: logger)
            var page: [(FamilyMember, PageCursor)] = []
            for try await (id, name, avatar, created) in rows.decode((UUID, String, String?, Date).self) {
                page.append(
                    (
                        FamilyMember(id: id, name: name, avatarUrl: avatar, createdAt: created),
                        PageCursor(createdAt: created, id: id)
                    ))
            }
            return page
        }
    }

    func create(for userId: UUID, name: String, avatarUrl: String?) async throws -> FamilyMember {
        try await database.transaction(userId: userId) { connection in
            // One parent's additions are serialised, so the cap holds under concurrent requests.
            try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: logger)
            let rows = try await connection.query(
                """
                INSERT INTO family_members (user_id, name, avatar_url)
                SELECT \(userId), \(name), \(avatarUrl)
                WHERE (SELECT count(*) FROM family_members WHERE user_id = \(userId)) < \(Self.maximum)
                RETURNING id, name, avatar_url, created_at
                """, logger: logger)
            for try await (id, name, avatar, created) in rows.decode((UUID, String, String?, Date).self) {
                return FamilyMember(id: id, name: name, avatarUrl: avatar, createdAt: created)
            }
            throw APIError(
                .conflict, code: "FAMILY_MEMBER_LIMIT", message: "At most \(Self.maximum) family members per account")
        }
    }

    func update(_ id: UUID, of userId: UUID, name: String?, avatarUrl: Change<String>) async throws -> FamilyMember {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                UPDATE family_members SET
                    name = coalesce(\(name), name),
                    avatar_url = CASE \(avatarUrl.tag) WHEN 'keep' THEN avatar_url ELSE \(avatarUrl.value) END
                WHERE id = \(id) AND user_id = \(userId)
                RETURNING id, name, avatar_url, created_at
                """, logger: logger)
            for try await (id, name, avatar, created) in rows.decode((UUID, String, String?, Date).self) {
                return FamilyMember(id: id, name: name, avatarUrl: avatar, createdAt: created)
            }
            throw Self.notFound
        }
    }

    func delete(_ id: UUID, of userId: UUID) async throws {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                "DELETE FROM family_members WHERE id = \(id) AND user_id = \(userId) RETURNING 1", logger: logger)
            for try await _ in rows { return }
            throw Self.notFound
        }
    }
}
