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
