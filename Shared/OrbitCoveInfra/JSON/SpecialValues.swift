import Foundation

enum SpecialResult {
    case written
    case nonFinite(NonFiniteNumber)
    /// The value needs its own `encode(to:)`.
    case notSpecial
}

extension Tree {
    /// Writes the types JSONEncoder encodes itself (Date, Data, URL, Decimal), UUID in lower case,
    /// and scalars whose `encode(to:)` would only come straight back through a single value container.
    ///
    /// Arrays are left to their `encode(to:)`: swift-foundation 6.3.1 means to write arrays of numbers
    /// and strings directly, but its type test looks at the wrong variable and never matches, so its
    /// arrays are always unkeyed containers (which count towards the nesting limit, and put the index
    /// in a NaN's coding path).
    ///
    /// Each test is a comparison of type metadata; a chain of `as?` casts would cost a runtime
    /// cast per test for every nested struct. JSONEncoder's `as?` also unwraps an Optional, but
    /// Optional's `encode(to:)` comes back here with the wrapped value, so the text is the same.
    mutating func appendSpecial<T: Encodable>(_ value: T, formatDate: (Date) -> String) -> SpecialResult {
        if let uuid = exactly(value, as: UUID.self) {
            scratch.appendJSONUUID(uuid)
        } else if let string = exactly(value, as: String.self) {
            scratch.appendJSONString(string)
        } else if let date = exactly(value, as: Date.self) {
            scratch.appendJSONString(formatDate(date))
        } else if let number = exactly(value, as: Int.self) {
            scratch.appendJSONInteger(number)
        } else if let bool = exactly(value, as: Bool.self) {
            scratch.appendJSONBool(bool)
        } else if let number = exactly(value, as: Double.self) {
            guard number.isFinite else { return .nonFinite(NonFiniteNumber(value: number)) }
            scratch.appendJSONFloat(number)
        } else if let number = exactly(value, as: Int64.self) {
            scratch.appendJSONInteger(number)
        } else if let raw = exactly(value, as: RawJSON.self) {
            scratch.append(contentsOf: raw.bytes)
        } else if let result = appendRareScalar(value) {
            return result
        } else {
            return .notSpecial
        }
        return .written
    }

    private mutating func appendRareScalar<T: Encodable>(_ value: T) -> SpecialResult? {
        if let number = exactly(value, as: Float.self) {
            guard number.isFinite else { return .nonFinite(NonFiniteNumber(value: number)) }
            scratch.appendJSONFloat(number)
        } else if let data = exactly(value, as: Data.self) {
            scratch.appendJSONString(data.base64EncodedString())
        } else if let url = exactly(value, as: URL.self) {
            scratch.appendJSONString(url.absoluteString)
        } else if let decimal = exactly(value, as: Decimal.self) {
            // Unquoted and unchecked, as JSONEncoder writes it (NaN included).
            scratch.append(contentsOf: decimal.description.utf8)
        } else if !appendInteger(value) {
            return nil
        }
        return .written
    }

    private mutating func appendInteger<T>(_ value: T) -> Bool {
        if let number = exactly(value, as: Int32.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt64.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt32.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: Int16.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt16.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: Int8.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt8.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: Int128.self) {
            scratch.appendJSONInteger(number)
        } else if let number = exactly(value, as: UInt128.self) {
            scratch.appendJSONInteger(number)
        } else {
            return false
        }
        return true
    }
}

/// The value when the types match exactly; cheap to ask of any value, unlike a cast.
@inline(__always)
private func exactly<T, Wanted>(_ value: T, as type: Wanted.Type) -> Wanted? {
    T.self == Wanted.self ? value as? Wanted : nil
}

/// A NaN or infinity, refused as JSONEncoder's default `.throw` strategy refuses it, with its words.
struct NonFiniteNumber {
    let value: Any
    let debugDescription: String

    init<Number: BinaryFloatingPoint>(value: Number) {
        self.value = value
        self.debugDescription = "Unable to encode \(Number.self).\(value) directly in JSON."
    }

    func encodingError(codingPath: [any CodingKey]) -> EncodingError {
        .invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: debugDescription))
    }
}
