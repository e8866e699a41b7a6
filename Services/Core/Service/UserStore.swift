import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

package struct UserStore: Sendable {
    let database: Database
    let logger: Logger

    package func user(id: UUID) async throws -> User? {
        let rows = try await database.client.query(
            """
            SELECT id, email, display_name, avatar_url, created_at, updated_at
            FROM users WHERE id = \(id) AND deleted_at IS NULL
            """, logger: logger)
        for try await (id, email, name, avatar, created, updated) in rows.decode(
            (UUID, String, String, String?, Date, Date).self)
        {
            return User(
                id: id, email: email, displayName: name, avatarUrl: avatar, createdAt: created, updatedAt: updated)
        }
        return nil
    }
}

struct UserRoutes {
    let store: UserStore

    func register(on router: Router<AppRequestContext>) {
        router.get("/api/v1/me") { _, context in
            let userId = try context.requireUser()
            guard let user = try await store.user(id: userId) else {
                throw APIError.notFound("USER_NOT_FOUND", "This account no longer exists")
            }
            return try Response.data(user, requestId: context.requestId)
        }
    }
}
