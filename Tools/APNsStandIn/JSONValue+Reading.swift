import Foundation
import OrbitCoveModels

/// Reading what a provider sent: the stand-in keeps each payload as a `JSONValue`, so what it
/// received can cross into tests.
extension JSONValue {
    /// Parses `bytes` as one JSON value; nil when they are not JSON.
    package init?(parsing bytes: some DataProtocol) {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else { return nil }
        self = value
    }

    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    package var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    package var numberValue: Double? {
        guard case .number(let value) = self else { return nil }
        return value
    }

    package var objectValue: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        return members
    }
}
