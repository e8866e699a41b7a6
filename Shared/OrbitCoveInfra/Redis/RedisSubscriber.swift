import Foundation
import Glibc
import Logging

/// The blocking side of `RedisClient.subscribe`: polls its socket with a timeout so that it
/// notices when to stop, and reconnects with back-off when the connection breaks.
struct RedisSubscriber {
    let settings: RedisSettings
    let channels: [String]
    let name: String?
    let logger: Logger

    func run(stop: AtomicFlag, deliver: (_ message: (channel: String, message: String)) -> Void) {
        var backoff = Backoff()
        while !stop.isSet {
            do {
                let connection = try RedisConnection(settings: settings)
                if let name { _ = try connection.command(["CLIENT", "SETNAME", name]) }
                _ = try connection.command(["SUBSCRIBE"] + channels)
                backoff.reset()
                while !stop.isSet {
                    while let reply = try connection.bufferedReply() {
                        if case .array(let parts) = reply, parts.count == 3, parts[0].string == "message",
                            let channel = parts[1].string, let message = parts[2].string
                        {
                            deliver((channel, message))
                        }
                    }
                    var descriptor = pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, 250)
                    if ready > 0 { try connection.fillBuffer() }
                    if ready < 0 && errno != EINTR { throw RedisError(message: "poll failed: \(errno)") }
                }
            } catch {
                logger.warning("redis subscription lost; reconnecting", metadata: ["error": .string("\(error)")])
                let delay = backoff.next()
                Thread.sleep(
                    forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            }
        }
    }
}
