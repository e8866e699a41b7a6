import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// A field of a PATCH body: left out (keep), `null` (clear) or a new value.
enum Change<Value: Sendable>: Sendable {
    case keep
    case clear
    case set(Value)

    var value: Value? {
        if case .set(let value) = self { return value }
        return nil
    }

    /// `keep` or `write`: lets one UPDATE statement leave a column alone or write it (NULL clears).
    var tag: String {
        if case .keep = self { return "keep" }
        return "write"
    }
}

/// Reads a JSON object field by field, collecting one problem per bad field, so a client
/// learns everything wrong with a request at once (`VALIDATION_FAILED` names each field).
struct FieldReader {
    let fields: [String: JSONValue]
    var problems: [String: String] = [:]

    init(_ fields: [String: JSONValue], allowed: Set<String>) {
        self.fields = fields
        for key in fields.keys where !allowed.contains(key) { problems[key] = "is not a field of this request" }
    }

    static func read(_ request: Request, context: some RequestContext, allowed: Set<String>) async throws -> FieldReader
    {
        FieldReader(try await request.decodeJSON(as: [String: JSONValue].self, context: context), allowed: allowed)
    }

    /// A trimmed text of 1...`maxLength` characters, counted as PostgreSQL counts them.
    mutating func text(_ key: String, maxLength: Int, required: Bool = false) -> Change<String> {
        switch fields[key] {
        case nil:
            if required { problems[key] = "is required" }
            return .keep
        case .null:
            if required { problems[key] = "must not be null" }
            return .clear
        case .string(let raw):
            let value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !value.isEmpty || !required else {
                problems[key] = "must not be empty"
                return .keep
            }
            guard value.databaseLength <= maxLength else {
                problems[key] = "must be at most \(maxLength) characters"
                return .keep
            }
            guard !value.unicodeScalars.contains("\u{0}") else {
                problems[key] = "must not contain NUL characters"
                return .keep
            }
            return value.isEmpty ? .clear : .set(value)
        default:
            problems[key] = "must be a string"
            return .keep
        }
    }

    /// An http(s) URL of at most 500 characters (avatars, icons).
    mutating func url(_ key: String) -> Change<String> {
        let change = text(key, maxLength: 500)
        if let value = change.value {
            let url = URL(string: value)
            guard url?.host != nil, ["http", "https"].contains(url?.scheme?.lowercased() ?? "") else {
                problems[key] = "must be an http(s) URL"
                return .keep
            }
        }
        return change
    }

    mutating func integer(_ key: String, in range: ClosedRange<Int>) -> Change<Int> {
        switch fields[key] {
        case nil: return .keep
        case .null: return .clear
        case .number(let number) where number.rounded() == number && range.contains(Int(exactly: number) ?? .min):
            return .set(Int(number))
        default:
            problems[key] = "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
            return .keep
        }
    }

    mutating func object(_ key: String) -> [String: JSONValue]? {
        switch fields[key] {
        case nil, .null: return nil
        case .object(let object): return object
        default:
            problems[key] = "must be an object"
            return nil
        }
    }

    mutating func role(_ key: String) -> MemberRole? {
        guard case .string(let text) = fields[key], let role = MemberRole(rawValue: text) else {
            problems[key] = "must be one of \(MemberRole.allCases.map(\.rawValue).joined(separator: ", "))"
            return nil
        }
        return role
    }

    /// Throws `VALIDATION_FAILED` when any field was bad.
    func check() throws {
        guard problems.isEmpty else { throw APIError.validation(problems) }
    }
}

extension CommunitySettings {
    /// IANA names only: Foundation would also accept abbreviations such as `EST`.
    static let ianaZones = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC"])

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
            case ("allowMemberEvents", _), ("allowMemberPosts", _): problems[field] = "must be true or false"
            case ("defaultReminderHours", .number(let hours))
            where hours.rounded() == hours && (0...720).contains(hours):
                settings.defaultReminderHours = Int(hours)
            case ("defaultReminderHours", _): problems[field] = "must be a whole number from 0 to 720"
            case ("timezone", .string(let zone)) where ianaZones.contains(zone):
                settings.timezone = zone
            case ("timezone", _): problems[field] = "must be an IANA time zone such as Europe/Berlin"
            default: problems[field] = "is not a community setting"
            }
        }
        return settings
    }
}
