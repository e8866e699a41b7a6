import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension MessageHandlers {
    /// Handles `type` by turning each message into notices, written into history.
    mutating func notify<Payload: MessagePayload>(
        _ type: Payload.Type, writer: HistoryWriter,
        _ notices: @escaping @Sendable (MessageEnvelope<Payload>, Lookup) async throws -> [Notice]
    ) {
        on(type) { envelope, connection, logger in
            let lookup = Lookup(connection: connection, logger: logger)
            try await writer.write(
                try await notices(envelope, lookup), for: envelope.id, occurredAt: envelope.occurredAt,
                on: connection, logger: logger)
        }
    }
}

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
