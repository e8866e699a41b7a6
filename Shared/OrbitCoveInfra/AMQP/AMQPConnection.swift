import COrbitShims
import CRabbitMQ
import Foundation

/// One blocking rabbitmq-c connection with one channel. Not thread-safe: exactly one thread
/// uses it for its whole life: the consumer's connection thread, the publisher's own thread,
/// or, for the short-lived connections of `AMQPProbe` and `DeadLetters`, one call on a
/// `NIOThreadPool.singleton` thread.
final class AMQPConnection {
    private let state: amqp_connection_state_t
    private var isOpen = false
    static let channel: amqp_channel_t = 1

    init(settings: AMQPSettings) throws {
        guard let state = amqp_new_connection() else { throw AMQPError.connect("out of memory") }
        // From here every stored property is set, so a throw runs `deinit`, which destroys the
        // connection state: the failure paths below must not destroy it themselves.
        self.state = state
        let socket = try Self.socket(for: settings, on: state)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        let status = amqp_socket_open_noblock(socket, settings.host, Int32(settings.port), &timeout)
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.connect("\(settings.host):\(settings.port): \(String(cString: amqp_error_string2(status)))")
        }
        try check(
            orbit_amqp_login_plain(
                state, settings.vhost, 0, 131_072, Int32(settings.heartbeatSeconds), settings.user,
                settings.password),
            during: "login")
        amqp_channel_open(state, Self.channel)
        try check(amqp_get_rpc_reply(state), during: "channel.open")
        isOpen = true
    }

    /// A plain TCP socket, or for `amqps` a TLS one that checks the broker's certificate.
    private static func socket(
        for settings: AMQPSettings, on state: amqp_connection_state_t
    ) throws -> OpaquePointer {
        guard let tls = settings.tls else {
            guard let socket = amqp_tcp_socket_new(state) else { throw AMQPError.connect("cannot create a socket") }
            return socket
        }
        guard let socket = amqp_ssl_socket_new(state) else { throw AMQPError.connect("cannot create a TLS socket") }
        if let caFile = tls.caFile {
            let status = amqp_ssl_socket_set_cacert(socket, caFile)
            guard status == AMQP_STATUS_OK.rawValue else {
                throw AMQPError.connect("cannot read CA file \(caFile): \(String(cString: amqp_error_string2(status)))")
            }
        }
        amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
        amqp_ssl_socket_set_verify_hostname(socket, tls.verifyPeer ? 1 : 0)
        return socket
    }

    deinit {
        if isOpen {
            amqp_channel_close(state, Self.channel, ORBIT_AMQP_REPLY_SUCCESS)
            amqp_connection_close(state, ORBIT_AMQP_REPLY_SUCCESS)
        }
        amqp_destroy_connection(state)
    }

    /// Marks the connection as unusable so `deinit` does not try a polite close on a dead socket.
    func abandon() { isOpen = false }

    func declare(_ topology: QueueTopology) throws {
        for exchange in topology.exchanges {
            let storage = AMQPTableStorage([])
            amqp_exchange_declare(
                state, Self.channel, storage.bytes(exchange.name), storage.bytes(exchange.type), 0, 1, 0, 0,
                amqp_empty_table)
            try check(amqp_get_rpc_reply(state), during: "exchange.declare \(exchange.name)")
        }
        for queue in topology.queues {
            let storage = AMQPTableStorage(queue.arguments)
            amqp_queue_declare(state, Self.channel, storage.bytes(queue.name), 0, 1, 0, 0, storage.table)
            try check(amqp_get_rpc_reply(state), during: "queue.declare \(queue.name)")
            for (exchange, routingKey) in queue.bindings {
                amqp_queue_bind(
                    state, Self.channel, storage.bytes(queue.name), storage.bytes(exchange), storage.bytes(routingKey),
                    amqp_empty_table)
                try check(amqp_get_rpc_reply(state), during: "queue.bind \(queue.name)")
            }
        }
    }

    /// Message count and consumer count of a queue, without changing it.
    func inspect(queue: String) throws -> (messages: Int, consumers: Int) {
        let storage = AMQPTableStorage([])
        guard let ok = amqp_queue_declare(state, Self.channel, storage.bytes(queue), 1, 0, 0, 0, amqp_empty_table)
        else {
            try check(amqp_get_rpc_reply(state), during: "queue.declare (passive) \(queue)")
            throw AMQPError.unexpected("no reply to passive queue.declare")
        }
        return (Int(ok.pointee.message_count), Int(ok.pointee.consumer_count))
    }

    /// Removes every ready message of `queue`; returns how many.
    func purge(queue: String) throws -> Int {
        let storage = AMQPTableStorage([])
        guard let ok = amqp_queue_purge(state, Self.channel, storage.bytes(queue)) else {
            try check(amqp_get_rpc_reply(state), during: "queue.purge \(queue)")
            throw AMQPError.unexpected("no reply to queue.purge")
        }
        return Int(ok.pointee.message_count)
    }

    /// Takes the next message of `queue` without acknowledging it (`basic.get`), or nil when the
    /// queue is empty. Unacknowledged messages return to the queue when the connection closes.
    func get(queue: String) throws -> IncomingMessage? {
        amqp_maybe_release_buffers(state)
        let storage = AMQPTableStorage([])
        let reply = amqp_basic_get(state, Self.channel, storage.bytes(queue), 0)
        try check(reply, during: "basic.get \(queue)")
        guard reply.reply.id == ORBIT_AMQP_BASIC_GET_OK else { return nil }
        let ok = reply.reply.decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        var message = amqp_message_t()
        try check(amqp_read_message(state, Self.channel, &message, 0), during: "reading a message")
        defer { amqp_destroy_message(&message) }
        return IncomingMessage(message, deliveryTag: ok.delivery_tag, redelivered: ok.redelivered != 0)
    }

    func deleteQueue(_ queue: String) throws {
        let storage = AMQPTableStorage([])
        amqp_queue_delete(state, Self.channel, storage.bytes(queue), 0, 0)
        try check(amqp_get_rpc_reply(state), during: "queue.delete \(queue)")
    }

    // MARK: Publishing

    func enableConfirms() throws {
        amqp_confirm_select(state, Self.channel)
        try check(amqp_get_rpc_reply(state), during: "confirm.select")
    }

    func publish(_ message: OutgoingMessage) throws {
        var headers = message.headers.map { ($0.key, AMQPFieldValue.string($0.value)) }
        headers.sort { $0.0 < $1.0 }
        let storage = AMQPTableStorage(headers)
        var properties = amqp_basic_properties_t()
        properties._flags =
            ORBIT_AMQP_FLAG_CONTENT_TYPE | ORBIT_AMQP_FLAG_DELIVERY_MODE | ORBIT_AMQP_FLAG_MESSAGE_ID
            | ORBIT_AMQP_FLAG_TYPE | ORBIT_AMQP_FLAG_TIMESTAMP | ORBIT_AMQP_FLAG_HEADERS | ORBIT_AMQP_FLAG_APP_ID
        properties.content_type = storage.bytes("application/json")
        properties.delivery_mode = 2
        properties.message_id = storage.bytes(message.id.lowercasedString)
        properties.type = storage.bytes(message.type)
        properties.timestamp = UInt64(Date().timeIntervalSince1970)
        properties.app_id = storage.bytes(message.appId)
        properties.headers = storage.table
        let status = message.body.withUnsafeBytes { body in
            amqp_basic_publish(
                state, Self.channel, storage.bytes(message.exchange), storage.bytes(message.routingKey), 1, 0,
                &properties,
                amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress)))
        }
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.library(String(cString: amqp_error_string2(status)), during: "basic.publish")
        }
    }

    enum ConfirmFrame {
        case ack(tag: UInt64, multiple: Bool)
        case nack(tag: UInt64, multiple: Bool)
        case returned(messageId: String?)
        case timeout
    }

    /// Waits up to `timeout` for the next frame relevant to a publisher in confirm mode.
    func nextConfirmFrame(timeout: Duration) throws -> ConfirmFrame {
        var frame = amqp_frame_t()
        var wait = timeval(duration: timeout)
        let status = amqp_simple_wait_frame_noblock(state, &frame, &wait)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return .timeout }
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.library(String(cString: amqp_error_string2(status)), during: "waiting for confirms")
        }
        guard frame.frame_type == ORBIT_AMQP_FRAME_METHOD else { return .timeout }
        let method = frame.payload.method
        switch method.id {
        case ORBIT_AMQP_BASIC_ACK:
            let ack = method.decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            return .ack(tag: ack.delivery_tag, multiple: ack.multiple != 0)
        case ORBIT_AMQP_BASIC_NACK:
            let nack = method.decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            return .nack(tag: nack.delivery_tag, multiple: nack.multiple != 0)
        case ORBIT_AMQP_BASIC_RETURN:
            var message = amqp_message_t()
            let reply = amqp_read_message(state, frame.channel, &message, 0)
            defer { amqp_destroy_message(&message) }
            try check(reply, during: "reading a returned message")
            return .returned(messageId: message.properties.message_id.string)
        default:
            try throwIfClosed(method, during: "waiting for confirms")
            return .timeout
        }
    }

    // MARK: Consuming

    func startConsuming(queue: String, prefetch: Int, consumerTag: String) throws {
        amqp_basic_qos(state, Self.channel, 0, UInt16(clamping: prefetch), 0)
        try check(amqp_get_rpc_reply(state), during: "basic.qos")
        let storage = AMQPTableStorage([])
        amqp_basic_consume(
            state, Self.channel, storage.bytes(queue), storage.bytes(consumerTag), 0, 0, 0, amqp_empty_table)
        try check(amqp_get_rpc_reply(state), during: "basic.consume \(queue)")
    }

    /// The next delivery, or nil when none arrived within `timeout`. Heartbeats are serviced here.
    func nextDelivery(timeout: Duration) throws -> IncomingMessage? {
        amqp_maybe_release_buffers(state)
        var envelope = amqp_envelope_t()
        var wait = timeval(duration: timeout)
        let reply = amqp_consume_message(state, &envelope, &wait, 0)
        if reply.reply_type == AMQP_RESPONSE_NORMAL {
            defer { amqp_destroy_envelope(&envelope) }
            return IncomingMessage(
                envelope.message, deliveryTag: envelope.delivery_tag, redelivered: envelope.redelivered != 0)
        }
        if reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION {
            if reply.library_error == AMQP_STATUS_TIMEOUT.rawValue { return nil }
            if reply.library_error == AMQP_STATUS_UNEXPECTED_STATE.rawValue {
                try readControlFrame()
                return nil
            }
        }
        try check(reply, during: "basic.consume")
        return nil
    }

    /// Whether rabbitmq-c holds received bytes or frames not yet handed out: then a delivery
    /// may be ready without the socket becoming readable again.
    var hasBufferedInput: Bool { amqp_data_in_buffer(state) != 0 || amqp_frames_enqueued(state) != 0 }

    /// The connection's socket, for waiting on it next to other descriptors.
    var socketDescriptor: Int32 { amqp_get_sockfd(state) }

    /// The heartbeat interval the broker and we agreed on at login (the lower of the two asked
    /// for), in seconds; 0 for none.
    var heartbeatSeconds: Int { Int(amqp_get_heartbeat(state)) }

    func ack(_ tag: UInt64) throws {
        let status = amqp_basic_ack(state, Self.channel, tag, 0)
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.library(String(cString: amqp_error_string2(status)), during: "basic.ack")
        }
    }

    func nack(_ tag: UInt64, requeue: Bool) throws {
        let status = amqp_basic_nack(state, Self.channel, tag, 0, requeue ? 1 : 0)
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.library(String(cString: amqp_error_string2(status)), during: "basic.nack")
        }
    }

    /// A frame other than a delivery arrived while consuming: a close ends the connection,
    /// a server-side cancel (queue deleted) too; anything else is ignored.
    private func readControlFrame() throws {
        var frame = amqp_frame_t()
        var wait = timeval(tv_sec: 0, tv_usec: 0)
        let status = amqp_simple_wait_frame_noblock(state, &frame, &wait)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return }
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError.library(String(cString: amqp_error_string2(status)), during: "reading a frame")
        }
        guard frame.frame_type == ORBIT_AMQP_FRAME_METHOD else { return }
        if frame.payload.method.id == ORBIT_AMQP_BASIC_CANCEL {
            throw AMQPError.unexpected("the broker cancelled the consumer")
        }
        try throwIfClosed(frame.payload.method, during: "consuming")
    }

    private func throwIfClosed(_ method: amqp_method_t, during: String) throws {
        switch method.id {
        case ORBIT_AMQP_CONNECTION_CLOSE:
            let close = method.decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            isOpen = false
            throw AMQPError.serverClosed(
                code: Int(close.reply_code), text: close.reply_text.string ?? "", during: during)
        case ORBIT_AMQP_CHANNEL_CLOSE:
            let close = method.decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            throw AMQPError.serverClosed(
                code: Int(close.reply_code), text: close.reply_text.string ?? "", during: during)
        default:
            return
        }
    }

    private func check(_ reply: amqp_rpc_reply_t, during: String) throws {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw AMQPError.library(String(cString: amqp_error_string2(reply.library_error)), during: during)
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            try throwIfClosed(reply.reply, during: during)
            throw AMQPError.unexpected("\(during): unexpected server reply \(reply.reply.id)")
        default:
            throw AMQPError.unexpected("\(during): no reply")
        }
    }
}

extension timeval {
    init(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
