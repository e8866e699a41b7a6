import Foundation
import Hummingbird
import OrbitCoveModels

/// A field of a PATCH body: left out (keep), `null` or named in `clear` (clear), or a new value.
package enum Change<Value: Sendable>: Sendable {
    case keep
    case clear
    case set(Value)

    package var value: Value? {
        if case .set(let value) = self { return value }
        return nil
    }

    /// `keep` or `write`: lets one UPDATE statement leave a column alone or write it (NULL clears).
    package var tag: String {
        if case .keep = self { return "keep" }
        return "write"
    }
}

/// Reads a JSON object field by field, collecting one problem per bad field, so a client
/// learns everything wrong with a request at once (`VALIDATION_FAILED` names each field).
package struct FieldReader {
    package let fields: [String: JSONValue]
    package var problems: [String: String] = [:]
    /// Whether `null` clears a field (a `PATCH`); where nothing can be cleared (a `POST`) it is
    /// refused, as the document says, rather than read as "left out".
    package let nullClears: Bool

    /// The key of a PATCH body's list of fields to clear. `{"clear": ["avatarUrl"]}` says what
    /// `{"avatarUrl": null}` says, in a form a generated client can send (it leaves a `nil` out
    /// of the body, so it cannot send `null`). Both forms are read here, and only here: the list
    /// is turned into `null`s before any field is read, so every route clears alike.
    package static let clearKey = "clear"

    /// - Parameter readsClearList: whether the body may carry `clear` (a PATCH's, where `null`
    ///   clears); elsewhere `clear` is an unknown field like any other.
    package init(
        _ fields: [String: JSONValue], allowed: Set<String>, nullClears: Bool = true, readsClearList: Bool = false
    ) {
        var fields = fields
        if readsClearList, nullClears, let list = fields.removeValue(forKey: Self.clearKey) {
            if let problem = Self.clear(list, in: &fields, allowed: allowed) { problems[Self.clearKey] = problem }
        }
        self.fields = fields
        self.nullClears = nullClears
        for key in fields.keys where !allowed.contains(key) { problems[key] = "is not a field of this request" }
    }

    package static func read(
        _ request: Request, context: some RequestContext, allowed: Set<String>, nullClears: Bool = true
    ) async throws -> FieldReader {
        FieldReader(
            try await request.decodeJSON(as: [String: JSONValue].self, context: context), allowed: allowed,
            nullClears: nullClears, readsClearList: request.method == .patch)
    }

    /// Writes `null` for each field `list` names; what is wrong with the list, if anything.
    private static func clear(
        _ list: JSONValue, in fields: inout [String: JSONValue], allowed: Set<String>
    ) -> String? {
        guard case .array(let items) = list else { return "must be a list of field names" }
        var names: [String] = []
        for item in items {
            guard case .string(let name) = item else { return "must be a list of field names" }
            let shown = name.prefix(100)
            guard allowed.contains(name) else { return "names \(shown), which is not a field of this request" }
            if let value = fields[name], value != .null { return "names \(shown), which the body also sets" }
            names.append(name)
        }
        for name in names { fields[name] = .null }
        return nil
    }

    /// `null` where it may not be: noted as the field's problem.
    private mutating func refusesNull(_ key: String, required: Bool) -> Bool {
        guard required || !nullClears else { return false }
        problems[key] = "must not be null"
        return true
    }

    /// A trimmed text of 1...`maxLength` characters, counted as PostgreSQL counts them.
    package mutating func text(_ key: String, maxLength: Int, required: Bool = false) -> Change<String> {
        switch fields[key] {
        case nil:
            if required { problems[key] = "is required" }
            return .keep
        case .null:
            return refusesNull(key, required: required) ? .keep : .clear
        case .string(let raw):
            let value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            // Nothing one can see (direction marks, joiners, a byte-order mark) is nothing.
            let blank = value.unicodeScalars.allSatisfy {
                $0.properties.isWhitespace || $0.properties.isDefaultIgnorableCodePoint
                    || [.format, .control].contains($0.properties.generalCategory)
            }
            guard !blank || !required else {
                problems[key] = "must not be empty"
                return .keep
            }
            // Counted as sent, as the API document's maxLength counts it, before the trim.
            guard raw.databaseLength <= maxLength else {
                problems[key] = "must be at most \(maxLength) characters"
                return .keep
            }
            guard !value.unicodeScalars.contains("\u{0}") else {
                problems[key] = "must not contain NUL characters"
                return .keep
            }
            return blank ? .clear : .set(value)
        default:
            problems[key] = "must be a string"
            return .keep
        }
    }

    /// Like ``text(_:maxLength:required:)``, for a name or a title: one line
    /// (``Swift/String/isOneLine`` once the ends are trimmed).
    package mutating func line(_ key: String, maxLength: Int, required: Bool = false) -> Change<String> {
        let value = text(key, maxLength: maxLength, required: required)
        if case .set(let line) = value, !line.isOneLine {
            problems[key] = Self.notOneLine
            return .keep
        }
        return value
    }

    /// What ``line(_:maxLength:required:)`` says of a text that is not one line.
    package static let notOneLine =
        "must be one line, without line breaks, tabs, other control characters or direction overrides"

    /// An http(s) URL of at most 500 characters (avatars, icons), exactly as sent: an empty
    /// string, one with whitespace or control characters anywhere, or one carrying a user name
    /// or password is not one (`null` clears, where that is allowed).
    package mutating func url(_ key: String) -> Change<String> {
        if case .string(let raw) = fields[key] {
            let url = URL(string: raw)
            guard
                !raw.unicodeScalars.contains(where: {
                    $0.properties.isWhitespace || $0.properties.generalCategory == .control
                }), url?.host != nil, url?.user == nil, url?.password == nil,
                ["http", "https"].contains(url?.scheme?.lowercased() ?? "")
            else {
                problems[key] = "must be an http(s) URL"
                return .keep
            }
        }
        return text(key, maxLength: 500)
    }

    package mutating func integer(_ key: String, in range: ClosedRange<Int>) -> Change<Int> {
        switch fields[key] {
        case nil: return .keep
        case .null: return refusesNull(key, required: false) ? .keep : .clear
        case .number(let number) where number.rounded() == number && range.contains(Int(exactly: number) ?? .min):
            return .set(Int(number))
        default:
            problems[key] = "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
            return .keep
        }
    }

    /// A finite number within `range`.
    package mutating func number(_ key: String, in range: ClosedRange<Double>) -> Change<Double> {
        switch fields[key] {
        case nil: return .keep
        case .null: return refusesNull(key, required: false) ? .keep : .clear
        case .number(let number) where range.contains(number):
            return .set(number)
        default:
            problems[key] = "must be a number from \(range.lowerBound) to \(range.upperBound)"
            return .keep
        }
    }

    /// One id, `null` clearing it where that is allowed.
    package mutating func id(_ key: String) -> Change<UUID> {
        switch fields[key] {
        case nil: return .keep
        case .null: return refusesNull(key, required: false) ? .keep : .clear
        case .string(let raw):
            guard let id = UUID(uuidString: raw) else {
                problems[key] = "must be an id"
                return .keep
            }
            return .set(id)
        default:
            problems[key] = "must be an id"
            return .keep
        }
    }

    package mutating func boolean(_ key: String) -> Bool? {
        switch fields[key] {
        case nil: return nil
        case .bool(let value): return value
        default:
            problems[key] = "must be true or false"
            return nil
        }
    }

    /// One of an enumeration's raw values.
    package mutating func choice<Value: RawRepresentable & CaseIterable>(
        _ key: String, as type: Value.Type
    )
        -> Change<Value> where Value.RawValue == String
    {
        switch fields[key] {
        case nil: return .keep
        case .null: return refusesNull(key, required: false) ? .keep : .clear
        case .string(let text):
            if let value = Value(rawValue: text) { return .set(value) }
            fallthrough
        default:
            problems[key] = "must be one of \(Value.allCases.map(\.rawValue).joined(separator: ", "))"
            return .keep
        }
    }

    /// An RFC 3339 date-time with an offset (`2026-05-01T18:00:00+02:00`).
    package mutating func instant(_ key: String, required: Bool = false) -> Change<Date> {
        switch fields[key] {
        case nil:
            if required { problems[key] = "is required" }
            return .keep
        case .null: return refusesNull(key, required: required) ? .keep : .clear
        case .string(let text):
            if let date = JSONCoding.parseTimestamp(text) { return .set(date) }
            problems[key] = "must be an ISO 8601 date-time with an offset"
            return .keep
        default:
            problems[key] = "must be an ISO 8601 date-time with an offset"
            return .keep
        }
    }

    /// A list of RFC 3339 date-times, at most `maxCount` of them.
    package mutating func instants(_ key: String, maxCount: Int) -> [Date]? {
        switch fields[key] {
        case nil: return nil
        case .null: return refusesNull(key, required: false) ? nil : []
        case .array(let items) where items.count <= maxCount:
            var dates: [Date] = []
            for item in items {
                guard case .string(let text) = item, let date = JSONCoding.parseTimestamp(text) else {
                    problems[key] = "must be a list of ISO 8601 date-times with offsets"
                    return nil
                }
                dates.append(date)
            }
            return dates
        default:
            problems[key] = "must be a list of at most \(maxCount) ISO 8601 date-times"
            return nil
        }
    }

    package mutating func object(_ key: String) -> [String: JSONValue]? {
        switch fields[key] {
        case nil: return nil
        case .object(let object): return object
        default:
            problems[key] = "must be an object"
            return nil
        }
    }

    package mutating func role(_ key: String) -> MemberRole? {
        guard case .string(let text) = fields[key], let role = MemberRole(rawValue: text) else {
            problems[key] = "must be one of \(MemberRole.allCases.map(\.rawValue).joined(separator: ", "))"
            return nil
        }
        return role
    }

    /// Throws `VALIDATION_FAILED` when any field was bad.
    package func check() throws {
        guard problems.isEmpty else { throw APIError.validation(problems) }
    }
}
