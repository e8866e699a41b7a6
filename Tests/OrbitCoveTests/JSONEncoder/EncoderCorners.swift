import Foundation

/// What no model holds today but a model could tomorrow: dictionaries keyed by UUID (an array of
/// keys and values in JSONEncoder) and by Int (an object), optionals of optionals, every integer
/// width, Float, Decimal, URL and Data, and containers nested by hand.
struct EncoderCorners: Encodable, Sendable {
    var byId: [UUID: Int]
    var byNumber: [Int: String]
    var maybeMaybe: Int??
    var optionals: [String?]
    var int8: Int8
    var uint8: UInt8
    var int16: Int16
    var uint16: UInt16
    var int32: Int32
    var uint32: UInt32
    var int64: Int64
    var uint64: UInt64
    var uint: UInt
    var float: Float
    var decimal: Decimal
    var url: URL?
    var data: Data
    var dates: [Date?]
    var byHand: ByHand

    init(_ draw: inout Draw) {
        byId = Dictionary(draw.list(0...3) { ($0.uuid(), $0.integer()) }, uniquingKeysWith: { a, _ in a })
        byNumber = Dictionary(draw.list(0...4) { ($0.integer(), $0.string(upTo: 4)) }, uniquingKeysWith: { a, _ in a })
        maybeMaybe = draw.maybe { $0.maybe { $0.integer() } }
        optionals = draw.list(0...3) { $0.maybe { $0.string(upTo: 4) } }
        int8 = Int8.random(in: .min ... .max, using: &draw.rng)
        uint8 = UInt8.random(in: .min ... .max, using: &draw.rng)
        int16 = Int16.random(in: .min ... .max, using: &draw.rng)
        uint16 = UInt16.random(in: .min ... .max, using: &draw.rng)
        int32 = Int32.random(in: .min ... .max, using: &draw.rng)
        uint32 = UInt32.random(in: .min ... .max, using: &draw.rng)
        int64 = Int64(draw.integer())
        uint64 = draw.chance(0.3) ? .max : UInt64.random(in: .min ... .max, using: &draw.rng)
        uint = UInt.random(in: .min ... .max, using: &draw.rng)
        float = Float(draw.double())
        if !float.isFinite { float = .greatestFiniteMagnitude }
        decimal = draw.pick(
            ["0", "-1.5", "3.14159265358979323846", "1e-20", "12345678901234567890"].compactMap {
                Decimal(string: $0)
            })
        url = draw.pick([
            nil, URL(string: "https://x.example/a/b?c=d&e=/f"),
            URL(string: "g/h", relativeTo: URL(string: "https://y.example/i/")),
        ])
        data = Data(draw.list(0...9) { UInt8($0.int(in: 0...255)) })
        dates = draw.list(0...2) { $0.maybe { $0.date() } }
        byHand = ByHand(
            first: draw.string(upTo: 4), second: draw.integer(), list: draw.list(0...3) { $0.double() },
            id: draw.uuid(), both: draw.chance(0.5))
    }

    /// Nested containers, a key written twice, nil through every container kind.
    struct ByHand: Encodable, Sendable {
        var first: String
        var second: Int
        var list: [Double]
        var id: UUID
        var both: Bool

        enum Keys: String, CodingKey { case nested, items, id, twice, none }
        enum Inner: String, CodingKey { case first, second }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var nested = container.nestedContainer(keyedBy: Inner.self, forKey: .nested)
            try nested.encode(first, forKey: .first)
            if both {
                // A second nested container for the same key writes into the same object.
                var again = container.nestedContainer(keyedBy: Inner.self, forKey: .nested)
                try again.encode(second, forKey: .second)
            }
            var items = container.nestedUnkeyedContainer(forKey: .items)
            for number in list { try items.encode(number) }
            try items.encodeNil()
            try items.encode(id)
            var inner = items.nestedContainer(keyedBy: Inner.self)
            try inner.encode(id, forKey: .first)
            try container.encode(first, forKey: .twice)
            try container.encode(second, forKey: .twice)
            try container.encodeNil(forKey: .none)
            try container.encode(id, forKey: .id)
        }
    }
}
