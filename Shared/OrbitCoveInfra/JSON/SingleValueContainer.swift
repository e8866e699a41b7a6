struct SingleValueContainer: SingleValueEncodingContainer {
    let state: EncodingState
    let node: Int

    var codingPath: [any CodingKey] { state.tree.codingPath(of: node) }

    mutating func encodeNil() throws { try state.setSingle(Never?.none as Any, into: node) { $0.appendJSONNull() } }
    mutating func encode(_ value: Bool) throws { try state.setSingle(value, into: node) { $0.appendJSONBool(value) } }
    mutating func encode(_ value: String) throws {
        try state.setSingle(value, into: node) { $0.appendJSONString(value) }
    }

    mutating func encode(_ value: Double) throws { try encodeFloat(value) }
    mutating func encode(_ value: Float) throws { try encodeFloat(value) }

    mutating func encode(_ value: Int) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int8) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int16) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int32) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int64) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int128) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt8) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt16) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt32) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt64) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt128) throws { try encodeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try state.encodeSingle(value, into: node)
    }

    private func encodeInteger<Integer: FixedWidthInteger>(_ value: Integer) throws {
        try state.setSingle(value, into: node) { $0.appendJSONInteger(value) }
    }

    private func encodeFloat<Number: BinaryFloatingPoint & CustomStringConvertible>(_ value: Number) throws {
        try state.checkFinite(value) { state.tree.codingPath(of: node) }
        try state.setSingle(value, into: node) { $0.appendJSONFloat(value) }
    }
}
