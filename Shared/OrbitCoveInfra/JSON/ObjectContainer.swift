struct ObjectContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: EncodingState
    let node: Int
    /// The encoder this container (or the container it is nested in) came from: values encoded
    /// here extend its coding path, as in JSONEncoder (see `Tree.codingPath(of:)`).
    let encoderNode: Int

    var codingPath: [any CodingKey] { state.tree.codingPath(of: node) }

    mutating func encodeNil(forKey key: Key) throws { set(key) { $0.appendJSONNull() } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(key) { $0.appendJSONBool(value) } }
    mutating func encode(_ value: String, forKey key: Key) throws { set(key) { $0.appendJSONString(value) } }

    mutating func encode(_ value: Double, forKey key: Key) throws { try encodeFloat(value, forKey: key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encodeFloat(value, forKey: key) }

    mutating func encode(_ value: Int, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { encodeInteger(value, forKey: key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { encodeInteger(value, forKey: key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let slot = try state.slot(for: value, owner: encoderNode, key: .key(key))
        state.tree.set(slot, forKey: key.stringValue, in: node)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    )
        -> KeyedEncodingContainer<NestedKey>
    {
        let object = state.nestedContainer(.object, forKey: key, in: node)
        return KeyedEncodingContainer(ObjectContainer<NestedKey>(state: state, node: object, encoderNode: encoderNode))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ArrayContainer(
            state: state, node: state.nestedContainer(.array, forKey: key, in: node), encoderNode: encoderNode)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(for: JSONKey.super) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(for: key) }

    /// JSONEncoder stores the super value when its encoder is released; for the usual
    /// `super.encode(to: container.superEncoder())` that is the same as storing it now.
    private func superEncoder(for key: some CodingKey) -> any Encoder {
        let superNode = state.tree.addNode(parent: encoderNode, key: .key(key))
        state.tree.set(.node(superNode), forKey: key.stringValue, in: node)
        return ValueEncoder(state: state, node: superNode)
    }

    private func set(_ key: Key, _ write: (inout [UInt8]) -> Void) {
        state.tree.set(forKey: key.stringValue, in: node, write)
    }

    private func encodeInteger<Integer: FixedWidthInteger>(_ value: Integer, forKey key: Key) {
        set(key) { $0.appendJSONInteger(value) }
    }

    private func encodeFloat<Number: BinaryFloatingPoint & CustomStringConvertible>(
        _ value: Number, forKey key: Key
    )
        throws
    {
        try state.checkFinite(value) { state.tree.codingPath(of: encoderNode) + [key] }
        set(key) { $0.appendJSONFloat(value) }
    }
}
