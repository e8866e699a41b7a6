import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `…/members/me/notification-preferences`: what the caller hears from this community.
struct NotificationPreferencesRoutes {
    let store: NotificationPreferencesStore
    /// At most this many muted series per community.
    static let maxMuted = 500
    /// At most this many event reminder lead times.
    static let maxLeadTimes = 5

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("members/me/notification-preferences") { _, context in
            let granted = try context.member(.viewContent)
            return try Response.data(
                try await store.preferences(of: granted.userId, in: granted.communityId), requestId: context.requestId)
        }
        community.patch("members/me/notification-preferences") { request, context in
            let granted = try context.member(.viewContent)
            let patch = try await read(request, context, asking: granted.userId, in: granted.communityId)
            let preferences = try await store.update(of: granted.userId, in: granted.communityId) { preferences in
                patch.apply(to: &preferences)
            }
            return try Response.data(preferences, requestId: context.requestId)
        }
    }

    /// A partial change: what is left out stays, `quietHours: null` ends quiet hours.
    struct Patch: Sendable {
        var push: Bool?
        var categories: [String: Bool] = [:]
        var mutedEvents: [UUID]?
        var quietHours: Change<QuietHours> = .keep
        var eventReminderMinutes: Change<[Int]> = .keep

        func apply(to preferences: inout NotificationPreferences) {
            if let push { preferences.push = push }
            preferences.categories.merge(categories) { _, new in new }
            if let mutedEvents { preferences.mutedEvents = mutedEvents }
            switch quietHours {
            case .keep: break
            case .clear: preferences.quietHours = nil
            case .set(let hours): preferences.quietHours = hours
            }
            switch eventReminderMinutes {
            case .keep: break
            case .clear: preferences.eventReminderMinutes = nil
            case .set(let minutes): preferences.eventReminderMinutes = minutes
            }
        }
    }

    private func read(
        _ request: Request, _ context: CommunityRequestContext, asking userId: UUID, in communityId: UUID
    ) async throws -> Patch {
        var reader = try await FieldReader.read(
            request, context: context,
            allowed: ["push", "categories", "mutedEvents", "quietHours", "eventReminderMinutes"])
        var patch = Patch()
        patch.push = reader.boolean("push")
        for (key, value) in reader.object("categories") ?? [:] {
            guard let category = NotificationCategory(rawValue: key), category != .personal else {
                reader.problems["categories.\(key)"] =
                    "is not a category; they are \(NotificationCategory.switchable.map(\.rawValue).joined(separator: ", "))"
                continue
            }
            guard case .bool(let on) = value else {
                reader.problems["categories.\(key)"] = "must be true or false"
                continue
            }
            patch.categories[category.rawValue] = on
        }
        switch reader.fields["mutedEvents"] {
        case nil: break
        case .array(let items) where items.count <= Self.maxMuted:
            let ids = items.compactMap { item -> UUID? in
                if case .string(let text) = item { return UUID(uuidString: text) }
                return nil
            }
            if ids.count == items.count {
                let muted = Array(Set(ids)).sorted { $0.uuidString < $1.uuidString }
                let unknown = try await store.unknownEvents(muted, in: communityId, asking: userId)
                if unknown.isEmpty {
                    patch.mutedEvents = muted
                } else {
                    let named = unknown.prefix(3).map(\.lowercasedString).joined(separator: ", ")
                    reader.problems["mutedEvents"] =
                        "names no event of this community: \(named)\(unknown.count > 3 ? " and \(unknown.count - 3) more" : "")"
                }
            } else {
                reader.problems["mutedEvents"] = "must be a list of event ids"
            }
        default:
            reader.problems["mutedEvents"] = "must be a list of at most \(Self.maxMuted) event ids"
        }
        switch reader.fields["quietHours"] {
        case nil: break
        case .null: patch.quietHours = .clear
        case .object(let fields):
            if let hours = try await quietHours(fields, asking: userId, problems: &reader.problems) {
                patch.quietHours = .set(hours)
            }
        default: reader.problems["quietHours"] = "must be an object or null"
        }
        switch reader.fields["eventReminderMinutes"] {
        case nil: break
        case .null: patch.eventReminderMinutes = .clear
        case .array(let items) where items.count <= Self.maxLeadTimes:
            let minutes = items.compactMap { item -> Int? in
                if case .number(let value) = item, value == value.rounded(), value >= 1,
                    value <= Double(ReminderDefaults.maxLeadMinutes)
                {
                    return Int(value)
                }
                return nil
            }
            if minutes.count == items.count {
                patch.eventReminderMinutes = .set(Array(Set(minutes)).sorted(by: >))
            } else {
                reader.problems["eventReminderMinutes"] =
                    "must be whole minutes from 1 to \(ReminderDefaults.maxLeadMinutes) (30 days)"
            }
        default:
            reader.problems["eventReminderMinutes"] =
                "must be a list of at most \(Self.maxLeadTimes) lead times in minutes, or null"
        }
        try reader.check()
        return patch
    }

    /// `{"start": "22:00", "end": "07:00", "timeZone": "Europe/Berlin", "breakThrough": ["mentions"]}`.
    private func quietHours(
        _ fields: [String: JSONValue], asking userId: UUID, problems: inout [String: String]
    ) async throws -> QuietHours? {
        let allowed: Set = ["start", "end", "timeZone", "breakThrough"]
        for key in fields.keys where !allowed.contains(key) {
            problems["quietHours.\(key)"] = "is not a field of quietHours"
        }
        var times: [String: String] = [:]
        for key in ["start", "end"] {
            guard case .string(let text) = fields[key], Self.isClockTime(text) else {
                problems["quietHours.\(key)"] = "must be a time of day as HH:MM (00:00 to 23:59)"
                continue
            }
            times[key] = text
        }
        var zone: String?
        // The names a community's time zone may have (no abbreviation, so not CET and its like),
        // and that PostgreSQL knows, as the quiet hours' check runs there.
        if case .string(let text) = fields["timeZone"], CommunitySettings.isZoneName(text),
            try await store.database.knowsZone(text)
        {
            zone = text
        } else {
            problems["quietHours.timeZone"] = "must be an IANA time zone such as Europe/Berlin"
        }
        var breakThrough: [NotificationCategory] = []
        switch fields["breakThrough"] {
        case nil: break
        case .array(let items):
            for item in items {
                guard case .string(let text) = item, let category = NotificationCategory(rawValue: text),
                    NotificationCategory.urgent.contains(category)
                else {
                    problems["quietHours.breakThrough"] =
                        "must list only \(NotificationCategory.urgent.map(\.rawValue).joined(separator: " and "))"
                    return nil
                }
                if !breakThrough.contains(category) { breakThrough.append(category) }
            }
        default:
            problems["quietHours.breakThrough"] = "must be a list"
        }
        if let start = times["start"], start == times["end"] {
            problems["quietHours.end"] = "must differ from start (to end quiet hours, send quietHours: null)"
            return nil
        }
        guard let start = times["start"], let end = times["end"], let zone else { return nil }
        return QuietHours(start: start, end: end, timeZone: zone, breakThrough: breakThrough)
    }

    static func isClockTime(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let hours = Int(parts[0]), let minutes = Int(parts[1])
        else { return false }
        return (0...23).contains(hours) && (0...59).contains(minutes)
    }
}
