import Foundation

/// A message payload with a stable type name and version; the envelope carries both so a
/// consumer can refuse what it does not understand instead of guessing.
package protocol MessagePayload: Codable, Sendable {
    static var messageType: String { get }
    static var messageVersion: Int { get }
}

/// The one JSON shape every queue carries. `id` is the outbox row id and the AMQP `message_id`.
package struct MessageEnvelope<Payload: MessagePayload>: Codable, Sendable {
    package var id: UUID
    package var type: String
    package var version: Int
    package var occurredAt: Date
    package var communityId: UUID?
    package var actorId: UUID?
    package var data: Payload

    package init(
        id: UUID = .random(),
        occurredAt: Date = Date(),
        communityId: UUID?,
        actorId: UUID?,
        data: Payload
    ) {
        self.id = id
        self.type = Payload.messageType
        self.version = Payload.messageVersion
        self.occurredAt = occurredAt
        self.communityId = communityId
        self.actorId = actorId
        self.data = data
    }
}

/// The envelope without its payload: enough to route a message to the handler for its type.
package struct EnvelopeHead: Decodable, Sendable {
    package var id: UUID
    package var type: String
    package var version: Int
    package var occurredAt: Date
    package var communityId: UUID?
    package var actorId: UUID?
}
