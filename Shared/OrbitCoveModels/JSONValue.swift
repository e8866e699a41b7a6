/// Arbitrary JSON, for the open-ended parts of a payload (error details, deep-link data).
package enum JSONValue: Codable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case object([String: JSONValue])
    case array([JSONValue])
    case null

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try Self.string(in: container) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value as a string, or nil if it is another kind. A string that cannot be read (a
    /// lone surrogate escape, bytes that are not UTF-8) throws as such: it is no other kind
    /// either, and "must be an object" would name the wrong problem.
    private static func string(in container: any SingleValueDecodingContainer) throws -> String? {
        do {
            return try container.decode(String.self)
        } catch DecodingError.typeMismatch {
            return nil
        } catch let error as DecodingError {
            throw error
        } catch {
            // The decoder's own error for the string's text, whose type it does not publish.
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath,
                    debugDescription: "is not valid text (a lone surrogate escape, or bytes that are not UTF-8)"))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByDictionaryLiteral {
    package init(stringLiteral value: String) { self = .string(value) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
