import Foundation
import OrbitCoveModels
import PropertyBased
import Testing

/// The random source of one generated case, and every UUID the case holds as a `UUID`: those
/// are what our encoder writes in lower case where `JSONEncoder` writes `uuidString`.
struct Draw {
    var rng: any SeededRandomNumberGenerator
    private(set) var ids: Set<UUID> = []

    init(rng: any SeededRandomNumberGenerator) {
        self.rng = rng
    }

    /// A generator of whole cases: `make` draws a value, the case remembers its UUIDs.
    static func cases<Value: Sendable>(
        _ make: @escaping @Sendable (inout Draw) -> Value
    ) -> Generator<GeneratedCase<Value>, Shrink.None<GeneratedCase<Value>>> {
        Generator { rng in
            var draw = Draw(rng: rng)
            let value = make(&draw)
            rng = draw.rng
            return GeneratedCase(value: value, ids: draw.ids)
        }
    }

    mutating func int(in range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < probability }
    mutating func pick<Element>(_ elements: [Element]) -> Element { elements[int(in: 0...elements.count - 1)] }
    mutating func pick<Value: CaseIterable>(_ type: Value.Type) -> Value { pick(Array(Value.allCases)) }

    /// Present three times in four.
    mutating func maybe<Value>(_ make: (inout Draw) -> Value) -> Value? { chance(0.75) ? make(&self) : nil }

    mutating func list<Value>(_ counts: ClosedRange<Int>, _ make: (inout Draw) -> Value) -> [Value] {
        (0..<int(in: counts)).map { _ in make(&self) }
    }

    // MARK: Identifiers

    mutating func uuid() -> UUID {
        var bytes = (UInt64.random(in: .min ... .max, using: &rng), UInt64.random(in: .min ... .max, using: &rng))
        let id = withUnsafeBytes(of: &bytes) { UUID(uuid: $0.load(as: uuid_t.self)) }
        ids.insert(id)
        return id
    }

    /// Text that looks like an upper-case UUID but is a `String`: both encoders must leave it be.
    mutating func uuidLookalike() -> String {
        var bytes = (UInt64.random(in: .min ... .max, using: &rng), UInt64.random(in: .min ... .max, using: &rng))
        return withUnsafeBytes(of: &bytes) { UUID(uuid: $0.load(as: uuid_t.self)) }.uuidString
    }

    // MARK: Scalars

    /// Pieces that JSON writers get wrong: the escapes, every control character, the slash,
    /// U+2028/2029 (legal in JSON, not in JavaScript), surrogate pairs in UTF-16 (4-byte UTF-8),
    /// combining marks, a byte-order mark, noncharacters, grapheme clusters of several scalars.
    static let awkward: [String] = [
        "\"", "\\", "/", "</script>", "\\u0000", "\u{2028}", "\u{2029}", "\u{85}", "\u{A0}", "\u{FEFF}", "\u{FFFD}",
        "\u{FFFF}", "\u{E000}", "\u{7F}", "é", "e\u{301}", "Å", "A\u{30A}", "ß", "İ", "ﬁ", "李小龙", "مرحبا", "🐯",
        "👩‍👩‍👧", "🇳🇴", "\u{1D11E}", "\u{10FFFF}", "\u{1F600}\u{FE0F}", " ", "\t", "\r\n", "%s", "null", "{}",
    ]

    mutating func string(upTo maxLength: Int = 24) -> String {
        var text = ""
        for _ in 0..<int(in: 0...maxLength) {
            switch int(in: 0...9) {
            case 0...3: text.unicodeScalars.append(Unicode.Scalar(UInt8(int(in: 0x20...0x7E))))
            case 4: text.unicodeScalars.append(Unicode.Scalar(UInt8(int(in: 0x00...0x1F))))
            case 5...6: text += pick(Self.awkward)
            case 7: text.unicodeScalars.append(scalar(in: 0x80...0xFFFF))
            case 8: text.unicodeScalars.append(scalar(in: 0x1_0000...0x10_FFFF))
            default: text += "abcdefghij ".prefix(int(in: 1...11))
            }
        }
        return text
    }

    /// A random scalar in the range, skipping the surrogate block (which no String can hold).
    private mutating func scalar(in range: ClosedRange<UInt32>) -> Unicode.Scalar {
        while true {
            if let scalar = Unicode.Scalar(UInt32.random(in: range, using: &rng)) { return scalar }
        }
    }

    /// A short name-like string, or (one time in eight) an awkward one.
    mutating func text() -> String {
        chance(0.125) ? string() : pick(["Ada", "Tigers U12", "Grace Hopper", "Zoë", "李小龙", "O'Brien"])
    }

    static let edgeIntegers: [Int] = [
        0, 1, -1, Int.max, Int.min, Int.max - 1, Int.min + 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1,
        Int(Int32.max), Int(Int32.min), Int(UInt32.max) + 1, 999_999_999_999_999_999,
    ]

    mutating func integer() -> Int {
        switch int(in: 0...3) {
        case 0: pick(Self.edgeIntegers)
        case 1: Int.random(in: .min ... .max, using: &rng)
        default: int(in: -100...1000)
        }
    }

    static let edgeDoubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 0.2, 0.3, 1.0 / 3, .pi, 0.5, 1e-7, 1e-6, 1e15, 1e16, 1e17, 1e21, 1e22, 1e300,
        Double(123_456_789_012_345_678 as Int), Double(9_007_199_254_740_993 as Int), 4_503_599_627_370_497.5,
        .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude,
        .ulpOfOne, 51.5007, -0.1246, 100, 1e2, 2.5e-5,
    ]

    /// A finite double: an edge value, any finite bit pattern, a decimal fraction or a whole number.
    mutating func double() -> Double {
        switch int(in: 0...3) {
        case 0: return pick(Self.edgeDoubles)
        case 1:
            while true {
                let value = Double(bitPattern: UInt64.random(in: .min ... .max, using: &rng))
                if value.isFinite { return value }
            }
        case 2: return Double(int(in: -1_000_000...1_000_000)) / Double(pick([1, 10, 100, 1000, 7]))
        default: return Double(int(in: -1_000_000_000...1_000_000_000))
        }
    }

    /// A date anywhere the timestamp format can write (years 1 to 9999), often on a whole
    /// millisecond, sometimes between two (the format truncates), before 1970 as often as not.
    mutating func date() -> Date {
        let seconds: Double
        switch int(in: 0...3) {
        case 0: seconds = Double(int(in: 1_600_000_000_000...1_900_000_000_000)) / 1000
        case 1: seconds = Double.random(in: -62_135_596_800..<253_402_300_800, using: &rng)
        case 2: seconds = Double(int(in: -62_135_596_800_000...253_402_300_799_999)) / 1000
        default: seconds = pick([0, -0.001, -0.0005, 0.0005, 0.999_9, -86_400, 951_782_400, 4_107_542_399.999])
        }
        return Date(timeIntervalSince1970: seconds)
    }

    // MARK: Open-ended JSON

    /// Arbitrary JSON (error details, deep-link data, attachments, sync rows) nested up to `depth`.
    mutating func json(depth: Int = 4) -> JSONValue {
        switch int(in: depth > 0 ? 0...7 : 0...3) {
        case 0: return .string(chance(0.1) ? uuidLookalike() : string())
        case 1: return .number(double())
        case 2: return chance(0.5) ? .bool(chance(0.5)) : .null
        case 3: return .number(Double(integer()))
        case 4, 5: return .object(jsonObject(depth: depth - 1))
        default: return .array(list(0...5) { $0.json(depth: depth - 1) })
        }
    }

    mutating func jsonObject(depth: Int = 3) -> [String: JSONValue] {
        Dictionary(list(0...6) { ($0.key(), $0.json(depth: depth)) }, uniquingKeysWith: { _, last in last })
    }

    /// An object key: usually a plain identifier, sometimes any string (escapes, non-ASCII,
    /// keys that share a long prefix, the empty key), so that key order is tested.
    mutating func key() -> String {
        switch int(in: 0...4) {
        case 0: string(upTo: 6)
        case 1: "sharedPrefix" + string(upTo: 3)
        case 2: pick(["", "a", "A", "_", "é", "e\u{301}", "z", "aa", "a\u{0}", "Z", "ä", "🐯", "\u{FFFF}"])
        default: pick(["eventId", "communityId", "postId", "count", "title", "url", "id", "type"])
        }
    }
}

/// One generated value and the UUIDs in it.
struct GeneratedCase<Value: Sendable>: Sendable, CustomTestStringConvertible {
    let value: Value
    let ids: Set<UUID>

    var testDescription: String { String(reflecting: value) }
}
