import Foundation
import OrbitCoveModels

/// Writes JSON straight to bytes, for the few responses large enough that going through
/// `Encodable` (a container per object, a box per key) is most of their cost: a window of
/// calendar instances is thousands of objects. Its output is the encoder's, byte for byte
/// (the same scalars, the same key order), which the types written this way test.
///
/// ```swift
/// var json = JSONWriter()
/// json.object { json in
///     json.field("id", event.id)
///     json.field("title", event.title)
/// }
/// return try Response.data(json.raw, requestId: context.requestId)
/// ```
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the next member of the innermost object or array needs a comma first.
    private var needsComma = false

    package init(capacity: Int = 4096) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far, as a value the encoder copies verbatim.
    package var raw: RawJSON { RawJSON(bytes: bytes) }

    package mutating func object(_ members: (inout JSONWriter) throws -> Void) rethrows {
        open(UInt8(ascii: "{"))
        try members(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    package mutating func array<Items: Sequence>(
        _ items: Items, _ write: (inout JSONWriter, Items.Element) throws -> Void
    ) rethrows {
        open(UInt8(ascii: "["))
        for item in items { try write(&self, item) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// An array of what `write(&json, index)` writes for each index below `count` (an index it
    /// writes nothing for adds nothing): ``array(_:_:)`` without its generic sequence, which a
    /// caller in another module runs unspecialised, through witness tables and type metadata
    /// per element.
    package mutating func array(count: Int, _ write: (inout JSONWriter, Int) throws -> Void) rethrows {
        open(UInt8(ascii: "["))
        for index in 0..<count { try write(&self, index) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member's name: the names written here are plain ASCII, which needs no escapes.
    package mutating func key(_ name: StaticString) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { name in
            assert(name.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
            bytes.append(contentsOf: name)
        }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Members written beforehand (`"a":1,"b":2`, no braces, see ``detached(_:)``), as the next
    /// members of the current object.
    package mutating func members(_ written: UnsafeBufferPointer<UInt8>) {
        guard !written.isEmpty else { return }
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: written)
        needsComma = true
    }

    /// An object begun beforehand: `{`, then `written` (members and the next member's key,
    /// `"a":1,"b":`, as ``detached(_:)`` writes them), whose value comes next.
    package mutating func open(membersThenKey written: UnsafeBufferPointer<UInt8>) {
        open(UInt8(ascii: "{"))
        bytes.append(contentsOf: written)
        needsComma = false
    }

    /// More members written beforehand and the next member's key (`"c":3,"d":`), whose value
    /// comes next.
    package mutating func membersThenKey(_ written: UnsafeBufferPointer<UInt8>) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: written)
        needsComma = false
    }

    /// The last members of an object, written beforehand, and its end.
    package mutating func close(members written: UnsafeBufferPointer<UInt8>) {
        members(written)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Members on their own (`"a":1,"b":2`, no braces, no comma before the first) added after
    /// what is written so far, to be copied into objects with ``members(_:)`` from the range
    /// they took in ``bytes``: a writer used for such runs, one after another, and nothing else
    /// (inside an object its members would lose their commas).
    package mutating func detached(_ write: (inout JSONWriter) throws -> Void) rethrows {
        needsComma = false
        try write(&self)
        needsComma = false
    }

    package mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { self.value(string: value) } else { null() }
    }

    package mutating func field(_ name: StaticString, _ value: UUID?) {
        key(name)
        prepare()
        if let value { bytes.appendJSONUUID(value) } else { bytes.appendJSONNull() }
    }

    package mutating func field(_ name: StaticString, _ value: Date?) {
        key(name)
        if let value { self.value(date: value) } else { null() }
    }

    package mutating func field(_ name: StaticString, _ value: Int?) {
        key(name)
        prepare()
        if let value { bytes.appendJSONInteger(value) } else { bytes.appendJSONNull() }
    }

    /// A finite number (the encoder refuses NaN and infinity; nothing written here has them).
    package mutating func field(_ name: StaticString, _ value: Double?) {
        key(name)
        prepare()
        if let value, value.isFinite { bytes.appendJSONFloat(value) } else { bytes.appendJSONNull() }
    }

    package mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        prepare()
        bytes.appendJSONBool(value)
    }

    /// Any encodable value, through the encoder (for the rare, small parts of a large response).
    package mutating func field<Value: Encodable>(_ name: StaticString, encoding value: Value) throws {
        key(name)
        prepare()
        bytes.append(contentsOf: try JSONCoding.encoder.encodeBytes(value))
    }

    /// A list of encodable values; an empty one (the usual case) without the encoder.
    package mutating func field<Element: Encodable>(_ name: StaticString, encoding values: [Element]) throws {
        guard values.isEmpty else { return try field(name, encoding: values as [Element]?) }
        key(name)
        prepare()
        bytes.append(contentsOf: "[]".utf8)
    }

    /// A timestamp as the encoder writes dates (``JSONCoding/formatTimestamp(_:)``).
    package mutating func value(date: Date) {
        prepare()
        bytes.append(UInt8(ascii: "\""))
        JSONCoding.appendTimestamp(date, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func value(string: String) {
        prepare()
        bytes.appendJSONString(string)
    }

    package mutating func null() {
        prepare()
        bytes.appendJSONNull()
    }

    private mutating func open(_ bracket: UInt8) {
        prepare()
        bytes.append(bracket)
        needsComma = false
    }

    /// A value in an array after another one needs its comma; after a key it does not.
    private mutating func prepare() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }
}

/// JSON text written beforehand (by ``JSONWriter``), which the encoder copies as it is.
package struct RawJSON: Encodable, Sendable {
    package let bytes: [UInt8]

    package init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// For encoders other than ours: the same value, parsed.
    package func encode(to encoder: any Encoder) throws {
        try JSONCoding.decoder.decode(JSONValue.self, from: Data(bytes)).encode(to: encoder)
    }
}
