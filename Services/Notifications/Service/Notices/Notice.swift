import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// One thing to tell some people: what a message type declares in ``NotificationCatalog``.
struct Notice: Sendable {
    var audience: Audience
    /// What kind of news it is; its category decides which preference switch governs it.
    var type: NotificationType
    var title: String
    var body: String
    var link: DeepLink
    /// The series whose muting silences it.
    var series: UUID? = nil
    /// Pushes with the same collapse id replace each other on a device (an event's updates).
    var collapseId: String? = nil
}

/// Who hears a notice. Current members only, but for ``person(_:of:)``; never the person who
/// caused it, when an `except` is given.
enum Audience: Sendable, Equatable {
    case members(of: UUID, except: [UUID])
    case admins(of: UUID, except: [UUID])
    /// Those of these users who are members.
    case users([UUID], of: UUID, except: [UUID])
    /// One person, member or not any more (someone just removed is still told why).
    case person(UUID, of: UUID)

    var community: UUID {
        switch self {
        case .members(let id, _), .admins(let id, _), .users(_, let id, _), .person(_, let id): id
        }
    }
}

/// Where a notification leads in the app: its `data`.
struct DeepLink: Sendable, Equatable {
    var communityId: UUID
    var eventId: UUID? = nil
    /// The instance of a series, by its original start.
    var recurrenceId: Date? = nil
    var postId: UUID? = nil
    var transactionId: UUID? = nil
    var duesId: UUID? = nil
    /// The member the news is about.
    var userId: UUID? = nil
    var familyMemberId: UUID? = nil
    /// A shared care reminder, and the date of its occurrence.
    var reminderId: UUID? = nil
    var occurrenceDate: String? = nil

    var data: [String: JSONValue] {
        var data: [String: JSONValue] = ["communityId": .string(communityId.lowercasedString)]
        let ids: [(String, UUID?)] = [
            ("eventId", eventId), ("postId", postId), ("transactionId", transactionId), ("duesId", duesId),
            ("userId", userId),
            ("familyMemberId", familyMemberId), ("reminderId", reminderId),
        ]
        for case (let key, let id?) in ids { data[key] = .string(id.lowercasedString) }
        if let occurrenceDate { data["occurrenceDate"] = .string(occurrenceDate) }
        if let recurrenceId { data["recurrenceId"] = .string(JSONCoding.formatTimestamp(recurrenceId)) }
        return data
    }
}
