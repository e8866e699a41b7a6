import Foundation
import OrbitCoveModels

extension APNsStandIn.Received {
    /// One line of the request log the push benchmark reads: `{"at": <unix seconds>, "token": …,
    /// "status": …, "reason": …, "collapseId": …, "pushType": …, "payload": {…}}`, absent values as null.
    package func logLine() -> [UInt8] {
        let line = LogLine(
            at: at.timeIntervalSince1970, token: token, status: status, reason: reason, collapseId: collapseId,
            pushType: pushType, payload: json.map(JSONValue.object))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ((try? encoder.encode(line)).map(Array.init) ?? []) + [UInt8(ascii: "\n")]
    }
}

private struct LogLine: Encodable {
    let at: Double
    let token: String
    let status: Int
    let reason: String?
    let collapseId: String?
    let pushType: String?
    let payload: JSONValue?

    enum CodingKeys: String, CodingKey {
        case at, token, status, reason, collapseId, pushType, payload
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(at, forKey: .at)
        try container.encode(token, forKey: .token)
        try container.encode(status, forKey: .status)
        try container.encode(reason, forKey: .reason)
        try container.encode(collapseId, forKey: .collapseId)
        try container.encode(pushType, forKey: .pushType)
        try container.encode(payload, forKey: .payload)
    }
}
