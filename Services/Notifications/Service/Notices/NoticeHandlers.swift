import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension MessageHandlers {
    /// Handles `type` by turning each message into notices, written into history: the messages
    /// of the type that arrive together are handled in one transaction, their notices written
    /// in one statement.
    mutating func notify<Payload: MessagePayload>(
        _ type: Payload.Type, writer: HistoryWriter,
        _ notices: @escaping @Sendable (MessageEnvelope<Payload>, Lookup) async throws -> [Notice]
    ) {
        onBatch(type) { envelopes, connection, logger in
            let lookup = Lookup(connection: connection, logger: logger)
            var messages: [HistoryWriter.MessageNotices] = []
            for envelope in envelopes {
                messages.append(
                    HistoryWriter.MessageNotices(
                        notices: try await notices(envelope, lookup), message: envelope.id,
                        occurredAt: envelope.occurredAt))
            }
            try await writer.write(messages, on: connection, logger: logger)
        }
    }
}
