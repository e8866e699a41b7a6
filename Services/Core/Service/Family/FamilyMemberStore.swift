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
    let writes: CommunityWrites
    let departed: DepartedAnswers
    let logger: Logger

    static let maximum = 20
    static let notFound = APIError.notFound("FAMILY_MEMBER_NOT_FOUND", "No such family member")

    /// Oldest first: the order they were added in.
    static let order = Keyset(.oldestFirst)

    func list(of userId: UUID, page: PageRequest) async throws -> [(FamilyMember, PageCursor)] {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM family_members
                WHERE user_id = \(userId)
                \(page: page, in: Self.order)
                """, logger: logger)
            var members: [(FamilyMember, PageCursor)] = []
            for try await row in rows {
                let member = try Self.read(row)
                members.append((member, PageCursor(createdAt: member.createdAt, id: member.id)))
            }
            return members
        }
    }

    func create(for userId: UUID, name: String, avatarUrl: String?) async throws -> FamilyMember {
        try await database.transaction(userId: userId) { connection in
            // One parent's additions are serialised, so the cap holds under concurrent requests.
            try await connection.run("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: logger)
            let rows = try await connection.query(
                """
                INSERT INTO family_members (user_id, name, avatar_url)
                SELECT \(userId), \(name), \(avatarUrl)
                WHERE (SELECT count(*) FROM family_members WHERE user_id = \(userId)) < \(Self.maximum)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            for try await row in rows { return try Self.read(row) }
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
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            for try await row in rows { return try Self.read(row) }
            throw Self.notFound
        }
    }

    /// Deletes it, first giving up the seats it held at what is still to come (the next in
    /// line takes each and is told, ``DepartedAnswers``); its other answers go with it.
    func delete(_ id: UUID, of userId: UUID, request: RequestFacts) async throws {
        try await writes.accountChange(of: userId, request: request) { account, connection in
            try await departed.withdraw(dependant: id, into: &account, on: connection)
            let deleted = try await connection.changedRows(
                "DELETE FROM family_members WHERE id = \(id) AND user_id = \(userId) RETURNING 1", logger: logger)
            guard deleted == 1 else { throw Self.notFound }
            account.touched(deleted)
        }
    }

    /// A family member as ``read(_:)`` reads it (a constant, written with `\(unescaped:)`).
    static let columns = "id, name, avatar_url, created_at"

    static func read(_ row: PostgresRow) throws -> FamilyMember {
        var cells = RowReader(row)
        return FamilyMember(
            id: try cells.next("id"), name: try cells.next("name"), avatarUrl: try cells.next("avatar_url"),
            createdAt: try cells.next("created_at"))
    }
}
