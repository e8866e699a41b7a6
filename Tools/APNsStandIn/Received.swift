import Foundation
import OrbitCoveModels

extension APNsStandIn {
    /// One request the stand-in answered, and how.
    package struct Received: Sendable {
        /// The device token from the path, as sent.
        package var token: String
        /// Every request header but the HTTP/2 pseudo-headers, names lowercased; repeats joined with ",".
        package var headers: [String: String]
        package var body: [UInt8]
        /// The body when it is a JSON object.
        package var json: [String: JSONValue]?
        package var at: Date
        package var status: Int
        package var reason: String?
        /// The `apns-id` the stand-in answered with.
        package var apnsId: String

        package var authorization: String? { headers["authorization"] }
        package var topic: String? { headers["apns-topic"] }
        package var pushType: String? { headers["apns-push-type"] }
        package var collapseId: String? { headers["apns-collapse-id"] }
        package var priority: String? { headers["apns-priority"] }
        package var expiration: String? { headers["apns-expiration"] }
        package var requestApnsId: String? { headers["apns-id"] }
    }
}
