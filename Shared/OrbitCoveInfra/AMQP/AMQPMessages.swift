import COrbitShims
import CRabbitMQ
import Foundation

/// A message to publish: persistent, JSON, to `exchange` with `routingKey`.
package struct OutgoingMessage: Sendable {
    package var id: UUID
    package var type: String
    /// `""` is the default exchange, where the routing key is a queue name.
    package var exchange: String
    package var routingKey: String
    package var body: [UInt8]
    package var headers: [String: String]
    package var appId: String

    package init(
        id: UUID, type: String, exchange: String = "", routingKey: String, body: [UInt8], headers: [String: String],
        appId: String
    ) {
        self.id = id
        self.type = type
        self.exchange = exchange
        self.routingKey = routingKey
        self.body = body
        self.headers = headers
        self.appId = appId
    }
}

/// A delivery, copied out of rabbitmq-c's buffers.
package struct IncomingMessage: Sendable {
    package var deliveryTag: UInt64
    package var redelivered: Bool
    package var messageId: String?
    package var type: String?
    package var appId: String?
    package var headers: [String: AMQPFieldValue]
    package var body: [UInt8]

    init(_ message: amqp_message_t, deliveryTag: UInt64, redelivered: Bool) {
        let properties = message.properties
        let flags = properties._flags
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.messageId = (flags & ORBIT_AMQP_FLAG_MESSAGE_ID) != 0 ? properties.message_id.string : nil
        self.type = (flags & ORBIT_AMQP_FLAG_TYPE) != 0 ? properties.type.string : nil
        self.appId = (flags & ORBIT_AMQP_FLAG_APP_ID) != 0 ? properties.app_id.string : nil
        self.headers = (flags & ORBIT_AMQP_FLAG_HEADERS) != 0 ? properties.headers.simpleValues : [:]
        self.body = message.body.array
    }

    /// Which attempt this is: 1, or what the retry router wrote when it scheduled a retry.
    package var attempt: Int {
        if case .string(let text) = headers[RetryRouter.attemptHeader], let attempt = Int(text), attempt > 0 {
            return attempt
        }
        return 1
    }

    /// The headers that are plain strings (for passing a message on).
    package var stringHeaders: [String: String] {
        headers.compactMapValues { value in
            if case .string(let text) = value { return text }
            return nil
        }
    }
}
