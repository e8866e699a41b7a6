import Foundation

/// Reads `ORBITCOVE_*` settings from the process environment. Every setting has a local
/// default (the README lists them); a malformed value fails start-up with the variable's name.
package struct Environment: Sendable {
    package let values: [String: String]

    package init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    package func string(_ name: String, default fallback: String) -> String {
        guard let value = values[name], !value.isEmpty else { return fallback }
        return value
    }

    package func optionalString(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    package func int(_ name: String, default fallback: Int) throws -> Int {
        guard let raw = optionalString(name) else { return fallback }
        guard let value = Int(raw) else { throw ConfigurationError(variable: name, reason: "not an integer: \(raw)") }
        return value
    }

    /// An integer that must lie in `range` (a timeout of zero or a negative size is a mistake).
    package func int(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        let value = try int(name, default: fallback)
        guard range.contains(value) else {
            throw ConfigurationError(variable: name, reason: "must be from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    package func bool(_ name: String, default fallback: Bool) throws -> Bool {
        guard let raw = optionalString(name)?.lowercased() else { return fallback }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, reason: "not a boolean: \(raw)")
        }
    }

    package func url(_ name: String, default fallback: String) throws -> URL {
        let raw = string(name, default: fallback)
        guard let url = URL(string: raw), url.scheme != nil, url.host != nil else {
            throw ConfigurationError(variable: name, reason: "not a URL")
        }
        return url
    }

    package func list(_ name: String, default fallback: [String]) -> [String] {
        guard let raw = optionalString(name) else { return fallback }
        return raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

package struct ConfigurationError: Error, CustomStringConvertible {
    package let variable: String
    package let reason: String

    package init(variable: String, reason: String) {
        self.variable = variable
        self.reason = reason
    }

    package var description: String { "invalid \(variable): \(reason)" }
}
