import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// The JSON a device receives: Apple's `aps` (alert, badge, sound, and the community as the
/// thread, so one community's notifications group together) and our own keys for the app
/// to open the right screen and mark the row read.
struct PushPayload: Encodable {
    struct Alert: Encodable {
        var title: String
        var body: String
    }

    struct APS: Encodable {
        var alert: Alert
        var badge: Int
        var sound = "default"
        var threadId: String?

        enum CodingKeys: String, CodingKey {
            case alert, badge, sound
            case threadId = "thread-id"
        }
    }

    /// APNs refuses a payload over 4 KB: a long body is cut to this many bytes.
    static let bodyBytes = 1500

    var aps: APS
    var notificationId: UUID
    var type: String
    var data: [String: JSONValue]

    init(
        notificationId: UUID, type: String, title: String, body: String, communityId: UUID?, data: String, badge: Int
    ) {
        aps = APS(
            alert: Alert(title: title, body: Self.shortened(body)), badge: badge,
            threadId: communityId?.lowercasedString)
        self.notificationId = notificationId
        self.type = type
        self.data = (try? JSONCoding.decoder.decode([String: JSONValue].self, from: Data(data.utf8))) ?? [:]
    }

    func bytes() throws -> [UInt8] { Array(try JSONCoding.encoder.encode(self)) }

    static func shortened(_ text: String) -> String {
        guard text.utf8.count > bodyBytes else { return text }
        var cut = ""
        for character in text {
            guard cut.utf8.count + character.utf8.count <= bodyBytes - 3 else { break }
            cut.append(character)
        }
        return cut + "…"
    }
}
