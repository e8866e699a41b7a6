import Foundation

extension APNsStandIn {
    /// What the stand-in answers to one request for a scripted device token.
    ///
    /// `.ok` answers as if unscripted (the request is checked, then 200); any other status is
    /// answered as given once the request has passed the checks, as APNs only reaches the device
    /// token's state after it has accepted the request.
    package struct Reply: Sendable, Hashable {
        package var status: Int
        package var reason: String?
        /// For 410: when APNs last confirmed the token was no longer valid (now if not given).
        package var timestamp: Date?
        /// How long the stand-in waits before it answers.
        package var delay: Duration = .zero

        package static let ok = Reply(status: 200, reason: nil, timestamp: nil)

        package static func status(_ code: Int, _ reason: String, timestamp: Date? = nil) -> Reply {
            Reply(status: code, reason: reason, timestamp: timestamp)
        }

        /// The same reply, answered only after `delay`.
        package func delayed(by delay: Duration) -> Reply {
            var reply = self
            reply.delay = delay
            return reply
        }
    }
}
