import Foundation
import OrbitCoveModels

@testable import AuthService
@testable import NotificationsService
@testable import OrbitCoveInfra

/// Random values of what services write beside the models: pages, sessions, the key set,
/// pushes, the sync response, and the shapes that exercise the encoder's limits.
extension Draw {
    mutating func page<Item: Encodable & Sendable>(_ item: (inout Draw) -> Item) -> ListEnvelope<Item> {
        ListEnvelope(data: list(0...6, item), meta: meta(), pagination: pagination())
    }

    mutating func session() -> SessionResponse {
        SessionResponse(
            accessToken: string(upTo: 40), expiresIn: integer(), refreshToken: string(upTo: 40),
            refreshTokenExpiresIn: integer(), user: user())
    }

    mutating func keySet() -> PublishedKeySet {
        PublishedKeySet(
            keys: list(0...3) { PublishedKeySet.Key(x: $0.string(upTo: 43), y: $0.string(upTo: 43), kid: $0.text()) })
    }

    mutating func pushPayload() -> PushPayload {
        var payload = PushPayload(
            notificationId: uuid(), type: pick(NotificationType.self).rawValue, title: text(), body: string(upTo: 60),
            communityId: maybe { $0.uuid() }, data: "{}", badge: integer())
        payload.data = jsonObject()
        return payload
    }

    /// What the sync route sends: sections erased to `any Encodable`, members and raw JSON rows.
    mutating func syncResponse() -> SyncResponse {
        let names = ["members", "events", "posts", "transactions"]
        var sections: [String: ErasedSection] = [:]
        for name in names where chance(0.8) {
            func rows(_ draw: inout Draw) -> [any Encodable & Sendable] {
                if name == "members" { return draw.list(0...3) { $0.member() } }
                return draw.list(0...3) { $0.json(depth: 3) }
            }
            sections[name] = ErasedSection(
                created: rows(&self), updated: rows(&self), deleted: list(0...3) { $0.uuid() })
        }
        return SyncResponse(
            community: maybe { $0.community() }, sections: sections, sectionNames: names, syncToken: string(upTo: 30),
            full: chance(0.5), nextPage: maybe { $0.string(upTo: 20) })
    }

    /// JSON nested `depth` deep, arrays and objects mixed: JSONEncoder refuses more than 512.
    mutating func nested(depth: Int) -> JSONValue {
        var value = json(depth: 0)
        for _ in 0..<depth {
            value = chance(0.5) ? .array([value]) : .object([key(): value])
        }
        return value
    }

    /// A response with one NaN or infinity somewhere in it, which both encoders must refuse
    /// with the same error (JSONEncoder's default `.throw`; the API never sets another).
    mutating func withNonFiniteNumber() -> NonFiniteResponse {
        let number = pick([Double.nan, -Double.nan, .infinity, -.infinity, .signalingNaN])
        switch int(in: 0...2) {
        case 0:
            var event = event()
            if chance(0.5) { event.locationLat = number } else { event.locationLng = number }
            return .event(DataEnvelope(data: event, meta: meta()))
        case 1:
            return .errorEnvelope(
                ErrorEnvelope(code: "X", message: string(), details: inserting(number, into: jsonObject())))
        default:
            var record = notificationRecord()
            record.data = inserting(number, into: record.data)
            return .notificationPage(
                ListEnvelope(data: [notificationRecord(), record], meta: meta(), pagination: pagination()))
        }
    }

    /// `object` with `number` at a random depth under a random key or index.
    private mutating func inserting(_ number: Double, into object: [String: JSONValue]) -> [String: JSONValue] {
        var object = object
        var leaf = JSONValue.number(number)
        for _ in 0..<int(in: 0...3) {
            leaf = chance(0.5) ? .array(list(0...2) { $0.json(depth: 0) } + [leaf]) : .object([key() + "!": leaf])
        }
        object[key() + "?"] = leaf
        return object
    }
}

enum NonFiniteResponse: Encodable, Sendable {
    case event(DataEnvelope<CalendarEvent>)
    case errorEnvelope(ErrorEnvelope)
    case notificationPage(ListEnvelope<NotificationRecord>)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .event(let value): try container.encode(value)
        case .errorEnvelope(let value): try container.encode(value)
        case .notificationPage(let value): try container.encode(value)
        }
    }
}
