import Foundation
import OrbitCoveInfra
import Testing

/// What it means for our encoder to be right: for every value, what Foundation's `JSONEncoder`
/// writes when set up as `JSONCoding` says ours is equivalent to (sorted keys, unescaped
/// slashes, `JSONCoding.formatTimestamp` for dates, the default `.throw` for NaN and infinity),
/// with the value's own UUIDs in lower case: the same bytes, which parse to the same tree,
/// or the same error.
enum ReferenceComparison {
    static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(JSONCoding.formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    enum Outcome: Equatable, CustomStringConvertible {
        case json([UInt8])
        /// `EncodingError.invalidValue`'s coding path (`stringValue`s) and words.
        case invalidValue(path: [String], description: String)
        case otherError(String)

        var description: String {
            switch self {
            case .json(let bytes): String(decoding: bytes, as: UTF8.self)
            case .invalidValue(let path, let description): "invalidValue at \(path): \(description)"
            case .otherError(let error): "error: \(error)"
            }
        }
    }

    static func ours(_ value: some Encodable) -> Outcome {
        outcome { try JSONCoding.encoder.encodeBytes(value) }
    }

    /// JSONEncoder's outcome, with `ids` (the value's own UUIDs) in lower case.
    static func expected(_ value: some Encodable, ids: Set<UUID>) -> Outcome {
        outcome { try lowerCasing(ids, in: Array(reference.encode(value))) }
    }

    /// Records an issue unless both encoders agree on `value`: equal bytes, equal parsed trees.
    static func expectSame(_ value: some Encodable, ids: Set<UUID>, sourceLocation: SourceLocation = #_sourceLocation) {
        let (ours, expected) = (ours(value), expected(value, ids: ids))
        guard case .json(let oursBytes) = ours, case .json(let expectedBytes) = expected else {
            #expect(ours == expected, sourceLocation: sourceLocation)
            return
        }
        #expect(
            ParsedJSON.parse(oursBytes) == ParsedJSON.parse(expectedBytes),
            "parsed trees differ: ours \(ours) / JSONEncoder \(expected)", sourceLocation: sourceLocation)
        #expect(
            oursBytes == expectedBytes, "\(firstDifference(oursBytes, expectedBytes))", sourceLocation: sourceLocation)
    }

    private static func outcome(_ encode: () throws -> [UInt8]) -> Outcome {
        do {
            return .json(try encode())
        } catch EncodingError.invalidValue(_, let context) {
            return .invalidValue(path: context.codingPath.map(\.stringValue), description: context.debugDescription)
        } catch {
            return .otherError(String(describing: error))
        }
    }

    /// Each quoted upper-case UUID that is one of `ids` in lower case. A string that merely looks
    /// like a UUID is not one of them (the generators never make a string from a case's own ids).
    static func lowerCasing(_ ids: Set<UUID>, in json: [UInt8]) -> [UInt8] {
        var json = json
        var index = 0
        while index + 37 < json.count {
            if json[index] == UInt8(ascii: "\""), json[index + 37] == UInt8(ascii: "\""),
                let id = UUID(uuidString: String(decoding: json[index + 1...index + 36], as: UTF8.self)),
                ids.contains(id), id.uuidString.utf8.elementsEqual(json[index + 1...index + 36])
            {
                json.replaceSubrange(index + 1...index + 36, with: id.lowercasedString.utf8)
                index += 38
            } else {
                index += 1
            }
        }
        return json
    }

    static func firstDifference(_ ours: [UInt8], _ expected: [UInt8]) -> String {
        let at =
            zip(ours, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(ours.count, expected.count)
        func around(_ bytes: [UInt8]) -> String {
            String(decoding: bytes[max(0, at - 40)..<min(bytes.count, at + 40)], as: UTF8.self).debugDescription
        }
        return "bytes differ at \(at): ours \(around(ours)) / JSONEncoder \(around(expected))"
    }
}

/// JSON as Foundation's `JSONDecoder` reads it: numbers as doubles, and exactly as integers where
/// they are, so a tree compares values, not spellings.
indirect enum ParsedJSON: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double, exactly: Int64?)
    case string(String)
    case array([ParsedJSON])
    case object([String: ParsedJSON])

    static func parse(_ bytes: [UInt8]) -> ParsedJSON? {
        try? JSONDecoder().decode(ParsedJSON.self, from: Data(bytes))
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value, exactly: try? container.decode(Int64.self))
        } else if let value = try? container.decode([ParsedJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ParsedJSON].self))
        }
    }
}
