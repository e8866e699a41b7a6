import Foundation
import OrbitCoveModels
import PostgresNIO

/// The `users` columns a profile is read from, and how a row becomes a ``User``: auth's
/// sign-in grant and core's `/me` read a user the same way (the grant had its own, shorter list,
/// and showed no scheduled deletion while `/me` did).
///
/// ```swift
/// SELECT \(unescaped: UserRows.columns) FROM users WHERE id = \(id)
/// ```
package enum UserRows {
    /// How long a deleted account waits before it is erased (`deletion_requested_at` plus this
    /// is when; the retention job erases it then), as an SQL interval.
    package static let accountGrace = "7 days"

    /// Needs `users` unaliased (a `RETURNING` list too).
    package static let columns = """
        id, email, display_name, avatar_url, avatar_media_id,
        deletion_requested_at + '\(accountGrace)'::interval AS deletion_scheduled_at, created_at, updated_at
        """

    package static func user(_ row: PostgresRow) throws -> User {
        var cells = RowReader(row)
        return User(
            id: try cells.next("id"), email: try cells.next("email"), displayName: try cells.next("display_name"),
            avatarUrl: try cells.next("avatar_url"), avatarMediaId: try cells.next("avatar_media_id"),
            deletionScheduledAt: try cells.next("deletion_scheduled_at"),
            createdAt: try cells.next("created_at"), updatedAt: try cells.next("updated_at"))
    }
}
