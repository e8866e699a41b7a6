import Foundation
import OrbitCoveInfra
import OrbitCoveModels

extension CommunitySettings {
    /// An IANA zone's Area/Location name (today's or an older alias, such as `Asia/Kolkata` and
    /// `Asia/Calcutta`), or `UTC`, that Foundation knows. Not an abbreviation such as `EST` or
    /// `CET`, which Foundation would take but PostgreSQL's `AT TIME ZONE` reads as a fixed offset
    /// (CET +01:00 all year): community days and quiet hours are computed in SQL as well. (Not
    /// `TimeZone.knownTimeZoneIdentifiers`, which leaves out zones as current as Asia/Kolkata.)
    /// PostgreSQL must know it too (`Database.knowsZone`): ICU keeps zones tzdata
    /// dropped (the SystemV ones).
    static func isZoneName(_ name: String) -> Bool {
        guard name.utf8.count <= 64, name == "UTC" || name.contains("/"),
            !name.split(separator: "/", omittingEmptySubsequences: false).contains(where: {
                $0 == ".." || $0 == "." || $0.isEmpty
            })
        else { return false }
        return TimeZone(identifier: name) != nil
    }

    /// Applies a partial settings object (`PATCH`), or validates a full one (create), naming
    /// each bad key as `settings.<key>`.
    static func merging(
        _ patch: [String: JSONValue], into base: CommunitySettings, problems: inout [String: String]
    )
        -> CommunitySettings
    {
        var settings = base
        for (key, value) in patch {
            let field = "settings.\(key)"
            switch (key, value) {
            case ("allowMemberEvents", .bool(let flag)): settings.allowMemberEvents = flag
            case ("allowMemberPosts", .bool(let flag)): settings.allowMemberPosts = flag
            case ("simplifyDebts", .bool(let flag)): settings.simplifyDebts = flag
            case ("allowMemberEvents", _), ("allowMemberPosts", _), ("simplifyDebts", _):
                problems[field] = "must be true or false"
            case ("defaultReminderHours", .number(let hours))
            where hours.rounded() == hours && (0...720).contains(hours):
                settings.defaultReminderHours = Int(hours)
            case ("defaultReminderHours", _): problems[field] = "must be a whole number from 0 to 720"
            case ("rsvpNudgeHours", .number(let hours)) where hours.rounded() == hours && (0...336).contains(hours):
                settings.rsvpNudgeHours = Int(hours)
            case ("rsvpNudgeHours", _): problems[field] = "must be a whole number from 0 to 336"
            case ("duesReminderDays", .array(let items)) where items.count <= 8:
                let days = items.compactMap { item -> Int? in
                    guard case .number(let day) = item, day.rounded() == day, (-30...90).contains(day) else {
                        return nil
                    }
                    return Int(day)
                }
                if days.count == items.count {
                    settings.duesReminderDays = Array(Set(days)).sorted()
                } else {
                    problems[field] = "must list whole days from -30 (before the due date) to 90 (overdue)"
                }
            case ("duesReminderDays", _): problems[field] = "must be a list of at most 8 days from the due date"
            case ("timezone", .string(let zone)) where isZoneName(zone):
                settings.timezone = zone
            case ("timezone", _): problems[field] = "must be an IANA time zone such as Europe/Berlin"
            case ("searchLanguage", .string(let language)) where searchLanguages.contains(language):
                settings.searchLanguage = language
            case ("searchLanguage", _):
                problems[field] = "must be one of \(searchLanguages.joined(separator: ", "))"
            default: problems[field] = "is not a community setting"
            }
        }
        return settings
    }
}
