import Foundation

/// A JSON document in a `Sendable` form, so that what the stand-in received can cross into tests.
package enum StandInJSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([StandInJSON])
    case object([String: StandInJSON])

    /// Parses `bytes` as one JSON value; nil when they are not JSON.
    package init?(parsing bytes: some DataProtocol) {
        guard let value = try? JSONDecoder().decode(StandInJSON.self, from: Data(bytes)) else { return nil }
        self = value
    }

    package subscript(key: String) -> StandInJSON? {
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

    package var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    package var objectValue: [String: StandInJSON]? {
        guard case .object(let members) = self else { return nil }
        return members
    }
}

extension StandInJSON: Codable {
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Bool before number: the decoder keeps them apart, and `true` must not read as 1.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([StandInJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: StandInJSON].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}
