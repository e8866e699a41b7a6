import CHiredis
import Foundation
import NIOCore

/// A reply from Redis, copied out of hiredis' memory.
package enum RedisReply: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case array([RedisReply])
    case status(String)
    case error(String)
    case null

    package var string: String? {
        switch self {
        case .string(let value), .status(let value): value
        case .integer(let value): String(value)
        default: nil
        }
    }

    package var integer: Int? {
        switch self {
        case .integer(let value): value
        case .string(let value): Int(value)
        default: nil
        }
    }

    init(_ reply: UnsafeMutablePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING: self = .string(Self.text(value))
        case REDIS_REPLY_STATUS: self = .status(Self.text(value))
        case REDIS_REPLY_ERROR: self = .error(Self.text(value))
        case REDIS_REPLY_INTEGER: self = .integer(Int(value.integer))
        case REDIS_REPLY_ARRAY:
            self = .array((0..<Int(value.elements)).compactMap { value.element[$0].map(RedisReply.init) })
        default: self = .null
        }
    }

    private static func text(_ reply: redisReply) -> String {
        guard let str = reply.str else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: str, count: Int(reply.len)), as: UTF8.self)
    }
}

package struct RedisError: Error, CustomStringConvertible {
    package let message: String
    /// Redis itself answered with an error (a wrong command), as opposed to not answering.
    package var isReply = false

    package init(message: String, isReply: Bool = false) {
        self.message = message
        self.isReply = isReply
    }

    package var description: String { "redis: \(message)" }

    /// The circuit breaker is open: Redis failed recently and is not being called for a while.
    package static let unavailable = RedisError(message: "unavailable (circuit open)")
    package var isCircuitOpen: Bool { message == Self.unavailable.message && !isReply }

    /// This process has too many commands queued for Redis already.
    package static let overloaded = RedisError(message: "too many commands waiting")
    package var isLocalOverload: Bool { message == Self.overloaded.message && !isReply }
}

package struct RedisSettings: Sendable {
    package var host: String
    package var port: Int
    package var database: Int
    package var password: String?

    package init(url: URL) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            components.scheme == "redis", let host = components.host
        else { throw ConfigurationError(variable: "Redis URL", reason: "expected redis://[:password@]host:port/db") }
        self.host = host
        self.port = components.port ?? 6379
        self.database = Int(components.path.dropFirst()) ?? 0
        self.password = components.password
    }
}

/// hiredis' incremental reply parser, for a connection that reads with NIO: bytes go in as they
/// arrive, whole replies come out in order. Confined to its channel's event loop.
final class RedisReplyReader {
    private let reader: UnsafeMutablePointer<redisReader>

    init() throws {
        guard let reader = redisReaderCreate() else { throw RedisError(message: "cannot allocate a reply reader") }
        self.reader = reader
    }

    deinit { redisReaderFree(reader) }

    func feed(_ bytes: UnsafeRawBufferPointer) throws {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return }
        guard redisReaderFeed(reader, start.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK else {
            throw RedisError(message: "reply reader: \(errorText)")
        }
    }

    /// The next whole reply fed so far, if there is one.
    func next() throws -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &raw) == REDIS_OK else {
            throw RedisError(message: "protocol error: \(errorText)")
        }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    private var errorText: String {
        withUnsafeBytes(of: reader.pointee.errstr) { buffer in
            String(decoding: buffer.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}

extension ByteBuffer {
    /// Writes a command as RESP, an array of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`).
    ///
    /// Written here rather than with hiredis' `redisFormatCommandArgv`, which would need every
    /// argument copied into C memory and its result copied again into a buffer and freed: this
    /// writes straight into the buffer the channel sends. `RedisTests` compares the two.
    package mutating func writeRedisCommand(_ arguments: [String]) {
        writeInteger(UInt8(ascii: "*"))
        writeString(String(arguments.count))
        writeStaticString("\r\n")
        for argument in arguments {
            writeInteger(UInt8(ascii: "$"))
            writeString(String(argument.utf8.count))
            writeStaticString("\r\n")
            writeString(argument)
            writeStaticString("\r\n")
        }
    }
}

/// One blocking hiredis context, for a subscription's own thread (commands go through
/// ``RedisPipelines``). Not thread-safe: used by one thread at a time.
final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>

    init(settings: RedisSettings, timeout: Duration = .seconds(2)) throws {
        guard let context = redisConnectWithTimeout(settings.host, Int32(settings.port), timeval(duration: timeout))
        else { throw RedisError(message: "cannot allocate a context") }
        guard context.pointee.err == 0 else {
            let message = Self.errorText(context)
            redisFree(context)
            throw RedisError(message: "cannot connect to \(settings.host):\(settings.port): \(message)")
        }
        self.context = context
        redisSetTimeout(context, timeval(duration: timeout))
        redisEnableKeepAlive(context)
        if let password = settings.password { try expectOK(command(["AUTH", password])) }
        if settings.database != 0 { try expectOK(command(["SELECT", String(settings.database)])) }
    }

    deinit { redisFree(context) }

    var fileDescriptor: Int32 { context.pointee.fd }

    /// Sends one command (binary-safe arguments, no variadic formatting) and reads its reply.
    func command(_ arguments: [String]) throws -> RedisReply {
        let raw = withArgv(arguments) { argc, argv, lengths in
            redisCommandArgv(context, argc, argv, lengths)
        }
        guard let raw else { throw RedisError(message: Self.errorText(context)) }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return RedisReply(reply)
    }

    /// A reply already received and buffered, if a whole one is there.
    func bufferedReply() throws -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &raw) == REDIS_OK else {
            throw RedisError(message: Self.errorText(context))
        }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Reads what the socket has into hiredis' buffer; call when the descriptor is readable.
    func fillBuffer() throws {
        guard redisBufferRead(context) == REDIS_OK else { throw RedisError(message: Self.errorText(context)) }
    }

    private func expectOK(_ reply: RedisReply) throws {
        if case .error(let message) = reply { throw RedisError(message: message) }
    }

    private func withArgv<Result>(
        _ arguments: [String],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) throws -> Result
    ) rethrows -> Result {
        let copies = arguments.map { argument -> (UnsafeMutablePointer<CChar>, Int) in
            let bytes = Array(argument.utf8)
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            for (index, byte) in bytes.enumerated() { buffer[index] = CChar(bitPattern: byte) }
            return (buffer, bytes.count)
        }
        defer { copies.forEach { $0.0.deallocate() } }
        var argv: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0.0) }
        let lengths = copies.map(\.1)
        return try argv.withUnsafeMutableBufferPointer { argvBuffer in
            try lengths.withUnsafeBufferPointer { lengthBuffer in
                guard let argvStart = argvBuffer.baseAddress, let lengthStart = lengthBuffer.baseAddress else {
                    throw RedisError(message: "a command needs at least one argument")
                }
                return try body(Int32(arguments.count), argvStart, lengthStart)
            }
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { buffer in
            String(decoding: buffer.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
