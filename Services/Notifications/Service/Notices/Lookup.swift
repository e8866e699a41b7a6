import Foundation
import Logging
import PostgresNIO

/// What a notice's words may need beyond its message, read in the handler's transaction.
struct Lookup {
    let connection: PostgresConnection
    let logger: Logger

    struct Guardian {
        var userId: UUID
        var dependantName: String
    }

    /// Who answers for a dependant, and the dependant's name.
    func guardian(of familyMember: UUID) async throws -> Guardian? {
        let rows = try await connection.query(
            "SELECT user_id, name FROM family_members WHERE id = \(familyMember)", logger: logger)
        for try await (user, name) in rows.decode((UUID, String).self) {
            return Guardian(userId: user, dependantName: name)
        }
        return nil
    }
}
